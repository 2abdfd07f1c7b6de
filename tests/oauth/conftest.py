"""Fixtures for the OAuth tests: a tenant that requires authorization, a member, a client, tokens."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, UserFactory

BASE = "http://127.0.0.1:8000"
ACME_MCP = f"{BASE}/t/acme/mcp"


@pytest.fixture
def acme(db: None) -> Any:
    return TenantFactory(slug="acme", name="Acme", requires_authorization=True)


@pytest.fixture
def globex(db: None) -> Any:
    return TenantFactory(slug="globex", name="Globex", requires_authorization=True)


@pytest.fixture
def member(acme: Any) -> Any:
    user = UserFactory(username="alice")
    MembershipFactory(user=user, tenant=acme)
    return user


@pytest.fixture
def client_app(db: None) -> Any:
    return OAuthClientFactory(name="Claude")
