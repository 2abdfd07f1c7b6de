"""Machine clients: registered by an admin for one tenant, client credentials, the client is the principal."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.hashers import identify_hasher
from django.core.exceptions import ValidationError
from django.test import Client
from oauth2_provider.models import get_access_token_model

from mcp_platform.oauth.machine_clients import machine_client_create, machine_client_rotate_secret
from mcp_platform.oauth.models import TenantApplication
from tests.factories import ToolFactory, UserFactory
from tests.gateway.conftest import INIT_PARAMS, request, rpc
from tests.oauth.conftest import ACME_MCP, BASE
from tests.oauth.flow import HOST, Pkce, authorize_query, client_credentials

GLOBEX_MCP = f"{BASE}/t/globex/mcp"


def _initialize(token: str, path: str = "/t/acme/mcp") -> Any:
    headers = {"authorization": f"Bearer {token}"}
    return async_to_sync(request)("POST", path, body=rpc("initialize", INIT_PARAMS), headers=headers)


@pytest.fixture
def machine(acme: Any) -> tuple[TenantApplication, str]:
    return machine_client_create(tenant=acme, name="Nightly report", scopes=["mcp:tools"])


def test_the_secret_is_handed_out_once_and_stored_hashed(machine):
    client, secret = machine
    stored = TenantApplication.objects.get(pk=client.pk)
    assert stored.client_secret != secret
    assert identify_hasher(stored.client_secret)
    assert stored.client_type == "confidential" and stored.authorization_grant_type == "client-credentials"
    assert stored.tenant.slug == "acme"


# The live ASGI stack runs on other connections: the rows must be committed.
@pytest.mark.django_db(transaction=True)
def test_token_audience_is_the_tenant_endpoint_and_the_principal_is_the_client(machine):
    client, secret = machine
    response = client_credentials(client.client_id, secret)
    assert response.status_code == 200, response.content
    tokens = response.json()
    assert tokens["scope"] == "mcp:tools"
    assert "refresh_token" not in tokens
    row = get_access_token_model().objects.get(application=client)
    assert row.user is None
    assert row.resource == [ACME_MCP]
    assert _initialize(tokens["access_token"]).status == 200


def test_naming_the_tenant_endpoint_is_allowed_and_any_other_is_invalid_target(machine, globex):
    client, secret = machine
    assert client_credentials(client.client_id, secret, resource=ACME_MCP).status_code == 200
    refused = client_credentials(client.client_id, secret, resource=GLOBEX_MCP)
    assert refused.status_code == 400
    # DOT labels this one error body text/html; the body is the RFC 6749 JSON all the same.
    assert json.loads(refused.content)["error"] == "invalid_target"


def test_scopes_are_limited_to_what_the_admin_allowed(machine):
    client, secret = machine
    # Asking for more (as SDKs do, echoing the endpoint's challenge) yields the allowed part, said so.
    narrowed = client_credentials(client.client_id, secret, scope="mcp:tools mcp:prompts")
    assert narrowed.status_code == 200
    assert narrowed.json()["scope"] == "mcp:tools"
    for nothing_allowed in ("mcp:prompts", "openid"):
        refused = client_credentials(client.client_id, secret, scope=nothing_allowed)
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_scope"


def test_wrong_secret_is_invalid_client(machine):
    client, _ = machine
    response = client_credentials(client.client_id, "not-the-secret")
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


# The live ASGI stack runs on other connections: the rows must be committed.
@pytest.mark.django_db(transaction=True)
def test_machine_token_is_rejected_at_another_tenant(machine, globex):
    client, secret = machine
    token = client_credentials(client.client_id, secret).json()["access_token"]
    assert _initialize(token, "/t/globex/mcp").status == 401


# The live ASGI stack runs on other connections: the rows must be committed.
@pytest.mark.django_db(transaction=True)
def test_rotating_the_secret_revokes_the_clients_tokens(machine):
    client, secret = machine
    token = client_credentials(client.client_id, secret).json()["access_token"]
    new_secret = machine_client_rotate_secret(client=client)
    assert _initialize(token).status == 401
    assert client_credentials(client.client_id, secret).status_code == 401
    assert client_credentials(client.client_id, new_secret).status_code == 200


def test_a_machine_client_cannot_be_authorized_by_a_person(machine, member):
    client, _ = machine
    browser = Client()
    browser.force_login(member)
    query = authorize_query(client.client_id, Pkce.new(), redirect_uri="http://127.0.0.1:53682/callback")
    page = browser.get("/oauth/authorize/", query, HTTP_HOST=HOST)
    # It has no redirect URI to send a code to: refused on the page, never redirected.
    assert page.status_code == 400
    assert "Mismatching redirect URI" in page.content.decode()


def test_scopes_must_be_platform_scopes_or_ones_a_tool_requires(acme):
    with pytest.raises(ValidationError):
        machine_client_create(tenant=acme, name="Bad", scopes=["billing:write"])
    with pytest.raises(ValidationError):
        machine_client_create(tenant=acme, name="None", scopes=[])
    ToolFactory(tenant=acme, name="charge", required_scopes="billing:write")
    client, _ = machine_client_create(tenant=acme, name="Billing", scopes=["billing:write", "mcp:tools"])
    assert client.allowed_scopes == "mcp:tools billing:write"


def test_admin_creates_a_machine_client_and_shows_its_secret_once(acme):
    admin_user = UserFactory(username="root", is_staff=True, is_superuser=True)
    browser = Client()
    browser.force_login(admin_user)
    response = browser.post(
        "/admin/oauth/machineclient/add/",
        {"tenant": acme.pk, "name": "CI pipeline", "allowed_scopes": "mcp:tools mcp:resources"},
        follow=True,
    )
    assert response.status_code == 200
    client = TenantApplication.objects.get(name="CI pipeline")
    shown = [str(m) for m in response.context["messages"] if "Secret of" in str(m)]
    assert len(shown) == 1 and client.client_id in shown[0]
    secret = shown[0].split(": ", 1)[1].split(" ")[0]
    assert client_credentials(client.client_id, secret).status_code == 200
    page = browser.get(f"/admin/oauth/machineclient/{client.pk}/change/").content.decode()
    assert secret not in page
    refused = browser.post(
        "/admin/oauth/machineclient/add/", {"tenant": acme.pk, "name": "Bad", "allowed_scopes": "billing:write"}
    )
    assert refused.status_code == 200
    assert "neither a platform scope" in refused.content.decode()
