"""Fixtures of the admin tests: ``ours`` and ``theirs``, the names these tests give the tenants' ``tenant`` (acme)
and ``other_tenant`` (globex, a slug in every name of their rows that the isolation test makes), ``owner`` (a client
signed in as the tenant's owner), and a cheap password hasher for the people every test signs in."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tenants.models import Tenant
from tests.factories import MembershipFactory, UserFactory


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


@pytest.fixture
def owner(client: Client, tenant: Tenant) -> Client:
    """The test client, signed in as olivia, the tenant's owner (by membership alone)."""
    user = UserFactory(username="olivia")
    MembershipFactory(tenant=tenant, user=user, role="owner")
    client.force_login(user)
    return client
