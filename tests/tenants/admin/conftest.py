"""Fixtures of the admin tests: ``ours`` and ``theirs``, the names these tests give the tenants' ``tenant`` (acme)
and ``other_tenant`` (globex, a slug in every name of their rows that the isolation test makes), and a cheap
password hasher for the people every test signs in."""

from __future__ import annotations

from typing import Any

import pytest

from tenants.models import Tenant


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    # Every test makes people and machine clients (hashed secrets); the hasher's cost is not what is tested.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def ours(tenant: Tenant) -> Tenant:
    return tenant


@pytest.fixture
def theirs(other_tenant: Tenant) -> Tenant:
    return other_tenant
