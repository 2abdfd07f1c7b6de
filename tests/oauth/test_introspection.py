"""Token introspection (RFC 7662) at the real endpoint: an upstream's own confidential client learns about the tokens
its tenant's clients exchanged for it, and about nothing else; every other caller is refused."""

from __future__ import annotations

import base64
import hashlib
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from mcp_platform.oauth.connections import connection_revoke
from mcp_platform.oauth.machine_clients import machine_client_create
from mcp_platform.oauth.models import TenantApplication
from mcp_platform.oauth.token_exchange import ACCESS_TOKEN_TYPE, GRANT_TYPE
from tenants.services import membership_remove
from tests.factories import MembershipFactory, OAuthClientFactory, access_token_create
from tests.oauth.conftest import ACME_MCP, BASE
from tests.oauth.flow import HOST

UPSTREAM = "https://billing.example.com/api"
OTHER_UPSTREAM = "https://crm.example.com/api"
INTROSPECT = "/oauth/introspect/"
INACTIVE = {"active": False}


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _client(tenant: Any, name: str, targets: list[str]) -> tuple[TenantApplication, str]:
    return machine_client_create(
        tenant=tenant, name=name, scopes=["mcp:tools", "mcp:prompts"], exchange_targets=targets
    )


@pytest.fixture
def gateway(acme: Any) -> tuple[TenantApplication, str]:
    """Acme's client that exchanges people's tokens for tokens to the billing API (and the CRM)."""
    return _client(acme, "Gateway", [UPSTREAM, OTHER_UPSTREAM])


@pytest.fixture
def billing(acme: Any) -> tuple[TenantApplication, str]:
    """The billing API's own client of Acme: it checks the tokens shown to it."""
    return _client(acme, "Billing API", [UPSTREAM])


@pytest.fixture
def subject(member: Any, client_app: Any) -> str:
    return access_token_create(user=member, application=client_app, resource=[ACME_MCP], scope="mcp:tools mcp:prompts")


def _basic(client: TenantApplication, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client.client_id}:{secret}".encode()).decode()


def _exchanged(gateway: tuple[TenantApplication, str], subject: str, target: str = UPSTREAM) -> str:
    response = Client().post(
        "/oauth/token/",
        {
            "grant_type": GRANT_TYPE,
            "subject_token": subject,
            "subject_token_type": ACCESS_TOKEN_TYPE,
            "resource": target,
            "scope": "mcp:tools",
        },
        HTTP_HOST=HOST,
        HTTP_AUTHORIZATION=_basic(*gateway),
    )
    assert response.status_code == 200, response.content
    token: str = response.json()["access_token"]
    return token


def _introspect(token: str, caller: tuple[TenantApplication, str] | None, **extra: Any) -> Any:
    headers = {"HTTP_AUTHORIZATION": _basic(*caller)} if caller is not None else {}
    return Client().post(INTROSPECT, {"token": token}, HTTP_HOST=HOST, **headers, **extra)


def _row(token: str) -> Any:
    return get_access_token_model().objects.get(token_checksum=hashlib.sha256(token.encode()).hexdigest())


def test_an_upstream_learns_who_a_token_exchanged_for_it_acts_for(gateway, billing, subject, member):
    token = _exchanged(gateway, subject)

    response = _introspect(token, billing)

    assert response.status_code == 200, response.content
    assert response["Cache-Control"] == "no-store"
    answer = response.json()
    expires = _row(token).expires
    assert answer == {
        "active": True,
        "scope": "mcp:tools",
        "exp": int(expires.timestamp()),
        "client_id": gateway[0].client_id,
        "username": "alice",
        "sub": str(member.pk),
        "aud": [UPSTREAM],
        "act": {"client_id": gateway[0].client_id},
    }
    assert token not in response.content.decode() and subject not in response.content.decode()


def test_client_secret_in_the_body_authenticates_too(gateway, billing, subject):
    token = _exchanged(gateway, subject)
    client, secret = billing
    response = Client().post(
        INTROSPECT, {"token": token, "client_id": client.client_id, "client_secret": secret}, HTTP_HOST=HOST
    )
    assert response.json()["active"] is True


def test_expired_and_revoked_tokens_are_inactive(gateway, billing, subject, member, client_app):
    expired = _exchanged(gateway, subject)
    row = _row(expired)
    row.expires = timezone.now() - timedelta(seconds=1)
    row.save(update_fields=["expires"])
    assert _introspect(expired, billing).json() == INACTIVE

    revoked = _exchanged(gateway, subject)
    assert _introspect(revoked, billing).json()["active"] is True
    # The person revokes the app they signed in with: what was exchanged from its token goes too.
    assert connection_revoke(user=member, application_id=client_app.pk, resource=ACME_MCP)
    assert _introspect(revoked, billing).json() == INACTIVE


def test_a_person_who_left_the_workspace_has_no_active_tokens(gateway, billing, subject, member, acme):
    token = _exchanged(gateway, subject)
    assert membership_remove(tenant=acme, user=member)
    assert _introspect(token, billing).json() == INACTIVE


def test_another_tenants_client_learns_nothing_not_even_that_the_token_exists(gateway, subject, globex, member):
    token = _exchanged(gateway, subject)
    MembershipFactory(user=member, tenant=globex)  # the person belongs to both: the token is still Acme's
    theirs = _client(globex, "Globex billing", [UPSTREAM])
    assert _introspect(token, theirs).json() == INACTIVE
    assert _introspect("made-up", theirs).json() == INACTIVE


def test_a_client_learns_only_about_tokens_for_its_own_upstreams(gateway, billing, subject):
    for_the_crm = _exchanged(gateway, subject, OTHER_UPSTREAM)
    assert _introspect(for_the_crm, billing).json() == INACTIVE
    # Nor about the person's token for the workspace's own endpoint, which no upstream should ever be shown.
    assert _introspect(subject, billing).json() == INACTIVE
    assert _introspect(subject, gateway).json() == INACTIVE


def test_an_unauthenticated_caller_is_refused(gateway, billing, subject):
    token = _exchanged(gateway, subject)
    for response in (
        _introspect(token, None),
        _introspect(token, (billing[0], "wrong secret")),
        # A bearer token is no client authentication here (DOT would take one with an "introspection" scope).
        Client().post(INTROSPECT, {"token": token}, HTTP_HOST=HOST, HTTP_AUTHORIZATION=f"Bearer {token}"),
    ):
        assert response.status_code == 401, response.content
        assert response.json()["error"] == "invalid_client"
        assert response["WWW-Authenticate"].startswith("Basic")
        assert "active" not in response.json()


def test_a_public_client_is_refused_even_with_a_secret(gateway, subject, acme):
    token = _exchanged(gateway, subject)
    public = OAuthClientFactory(tenant=acme, client_secret="public-but-known")
    response = _introspect(token, (public, "public-but-known"))
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


def test_a_confidential_client_without_exchange_targets_is_refused(gateway, subject, acme):
    token = _exchanged(gateway, subject)
    nightly = machine_client_create(tenant=acme, name="Nightly job", scopes=["mcp:tools"])
    response = _introspect(token, nightly)
    assert response.status_code == 403
    assert response.json()["error"] == "unauthorized_client"


def test_introspection_is_post_only_and_needs_a_token(billing):
    assert (
        Client().get(INTROSPECT, {"token": "t"}, HTTP_HOST=HOST, HTTP_AUTHORIZATION=_basic(*billing)).status_code == 405
    )
    response = Client().post(INTROSPECT, {}, HTTP_HOST=HOST, HTTP_AUTHORIZATION=_basic(*billing))
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_introspections_are_limited_per_client_per_hour(gateway, billing, subject, settings):
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TOKEN_INTROSPECTIONS_PER_CLIENT_PER_HOUR": 1}
    token = _exchanged(gateway, subject)
    assert _introspect(token, billing).json()["active"] is True
    refused = _introspect(token, billing)
    assert refused.status_code == 429
    assert refused.json()["error"] == "temporarily_unavailable"
    assert 0 < int(refused["Retry-After"]) <= 3600


def test_discovery_advertises_the_endpoint_for_confidential_clients(client, db):
    for document in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        metadata = client.get(document, HTTP_HOST=HOST).json()
        assert metadata["introspection_endpoint"] == f"{BASE}{INTROSPECT}"
        assert metadata["introspection_endpoint_auth_methods_supported"] == [
            "client_secret_basic",
            "client_secret_post",
        ]
