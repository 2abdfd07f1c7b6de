"""Fixtures for the OAuth tests: tenants that require authorization, a member (signed in), a client."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

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


@pytest.fixture(autouse=True)
def _fresh_rate_limits() -> None:
    """Registration is rate-limited per address in the cache: every test starts with a clean count."""
    cache.clear()


@pytest.fixture
def browser(member: Any) -> Client:
    """The member, signed in."""
    browser = Client()
    browser.force_login(member)
    return browser
