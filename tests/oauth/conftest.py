"""Fixtures for the OAuth tests: tenants that require authorization, a member (signed in), a client, and an
HTTPS server for client metadata documents."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, UserFactory
from tests.https_documents import DocumentServer, make_test_pki

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


@pytest.fixture(scope="session")
def test_pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Any]:
    """A test CA and a server certificate for 127.0.0.1 (see tests/https_documents.py)."""
    return make_test_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def documents(test_pki: tuple[Any, Any, Any]) -> Iterator[DocumentServer]:
    """An HTTPS server on loopback publishing client metadata documents."""
    _, cert, key = test_pki
    with DocumentServer(cert, key) as server:
        yield server


@pytest.fixture
def loopback_documents_trusted(settings: Any, test_pki: tuple[Any, Any, Any]) -> None:
    """The explicit allow-list a developer sets to let the platform fetch documents from their own machine."""
    settings.MCP_PLATFORM = {
        **settings.MCP_PLATFORM,
        "CIMD_ALLOWED_NETWORKS": ["127.0.0.1/32"],
        "CIMD_CA_BUNDLE": str(test_pki[0]),
    }
