"""Each named server of a tenant is an OAuth protected resource of its own: its RFC 9728 metadata, its exact
audience at the gateway (a token for one server is no token for another, nor for the tenant's default endpoint, and
the reverse), its own required scopes, and grants for it at the authorization server."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import Client
from oauth2_provider.models import AccessToken

from mcp_platform.oauth.machine_clients import machine_client_create
from tenants.servers import server_create
from tests.factories import MembershipFactory, access_token_create
from tests.gateway.conftest import INIT_PARAMS, request, rpc
from tests.oauth.conftest import ACME_MCP, BASE
from tests.oauth.flow import HOST, Pkce, authorize_query, client_credentials, tokens
from tests.oauth.test_authorization_server import _registered_client_id, _urlencode

READER = f"{BASE}/t/acme/s/reader/mcp"
WRITER = f"{BASE}/t/acme/s/writer/mcp"
METADATA = "/.well-known/oauth-protected-resource"


@pytest.fixture
def servers(acme: Any) -> dict[str, Any]:
    return {
        "reader": server_create(tenant=acme, slug="reader", title="Acme reader", required_scopes="reports:read"),
        "writer": server_create(tenant=acme, slug="writer"),
        "retired": server_create(tenant=acme, slug="retired", enabled=False),
    }


def _initialize(path: str, token: str | None) -> Any:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return async_to_sync(request)("POST", path, body=rpc("initialize", INIT_PARAMS), headers=headers)


def _token(member: Any, client_app: Any, resource: str, scope: str = "mcp:tools reports:read") -> str:
    return access_token_create(user=member, application=client_app, resource=[resource], scope=scope)


def _metadata_url(challenge: str) -> str:
    return challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]


# ---- metadata ------------------------------------------------------------------------------------------------


def test_a_servers_metadata_names_its_exact_url_its_title_and_its_scopes(client, acme, servers):
    document = client.get(f"{METADATA}/t/acme/s/reader/mcp", HTTP_HOST=HOST).json()
    assert document["resource"] == READER
    assert document["resource_name"] == "Acme reader"
    assert document["authorization_servers"] == [BASE]
    assert document["scopes_supported"] == ["mcp:tools", "mcp:resources", "mcp:prompts", "reports:read"]
    legacy = client.get(f"{METADATA}/t/acme/s/reader/sse", HTTP_HOST=HOST).json()
    messages = client.get(f"{METADATA}/t/acme/s/reader/messages", HTTP_HOST=HOST).json()
    assert (legacy["resource"], messages["resource"]) == (
        f"{BASE}/t/acme/s/reader/sse",
        f"{BASE}/t/acme/s/reader/messages",
    )
    writer = client.get(f"{METADATA}/t/acme/s/writer/mcp", HTTP_HOST=HOST).json()
    assert writer["resource_name"] == "Acme: writer"
    assert "reports:read" not in writer["scopes_supported"]


@pytest.mark.parametrize("path", ["/t/acme/s/nobody/mcp", "/t/acme/s/retired/mcp", "/t/globex/s/reader/mcp"])
def test_the_metadata_of_no_servable_server_is_404(client, acme, globex, servers, path):
    assert client.get(f"{METADATA}{path}", HTTP_HOST=HOST).status_code == 404


# ---- the gateway's audience ------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_token_for_one_server_opens_that_server_only(acme, member, client_app, servers):
    reader = _token(member, client_app, READER)
    assert _initialize("/t/acme/s/reader/mcp", reader).status == 200
    for path, metadata in [
        ("/t/acme/s/writer/mcp", f"{BASE}{METADATA}/t/acme/s/writer/mcp"),
        ("/t/acme/mcp", f"{BASE}{METADATA}/t/acme/mcp"),
    ]:
        refused = _initialize(path, reader)
        assert refused.status == 401, path
        challenge = refused.headers["www-authenticate"]
        assert 'error="invalid_token"' in challenge
        assert _metadata_url(challenge) == metadata, "the refusal points at the metadata of the URL asked"


@pytest.mark.django_db(transaction=True)
def test_a_token_for_the_default_endpoint_or_another_server_is_refused_at_a_server(acme, member, client_app, servers):
    for resource in (ACME_MCP, WRITER, f"{BASE}/t/acme/sse"):
        refused = _initialize("/t/acme/s/reader/mcp", _token(member, client_app, resource))
        assert refused.status == 401, resource
        assert _metadata_url(refused.headers["www-authenticate"]) == f"{BASE}{METADATA}/t/acme/s/reader/mcp"


@pytest.mark.django_db(transaction=True)
def test_the_legacy_transport_of_a_server_takes_the_tokens_of_that_server_only(acme, member, client_app, servers):
    sse = async_to_sync(request)
    for resource, status in [(READER, 200), (f"{BASE}/t/acme/s/reader/sse", 200), (ACME_MCP, 401), (WRITER, 401)]:
        token = _token(member, client_app, resource)
        headers = {"authorization": f"Bearer {token}", "accept": "text/event-stream"}
        # A refused GET is answered at once; an accepted one opens the stream (its first event names /messages).
        if status == 401:
            reply = sse("GET", "/t/acme/s/reader/sse", headers=headers)
            assert reply.status == 401, resource
            assert _metadata_url(reply.headers["www-authenticate"]) == f"{BASE}{METADATA}/t/acme/s/reader/sse"
        else:
            posted = sse("POST", "/t/acme/s/reader/messages?session_id=none", body=rpc("ping"), headers=headers)
            assert posted.status == 404, "past the token check: no such session"


@pytest.mark.django_db(transaction=True)
def test_a_server_asks_for_its_own_scopes_on_every_request(acme, member, client_app, servers):
    unauthenticated = _initialize("/t/acme/s/reader/mcp", None)
    assert 'scope="mcp:tools mcp:resources mcp:prompts reports:read"' in unauthenticated.headers["www-authenticate"]
    without = _token(member, client_app, READER, scope="mcp:tools")
    refused = _initialize("/t/acme/s/reader/mcp", without)
    assert refused.status == 403
    challenge = refused.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="mcp:tools reports:read"' in challenge
    assert _initialize("/t/acme/s/writer/mcp", _token(member, client_app, WRITER, scope="mcp:tools")).status == 200


# ---- the authorization server -----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_member_gets_a_token_for_a_server_with_its_scope_and_it_stays_the_servers(client, acme, browser, servers):
    client_id = _registered_client_id(client)
    issued = tokens(browser, client_id, resource=READER, scope="mcp:tools reports:read")
    stored = AccessToken.objects.get(token_checksum=hashlib.sha256(issued["access_token"].encode()).hexdigest())
    assert stored.resource == [READER]
    assert set(stored.scope.split()) == {"mcp:tools", "reports:read"}
    refreshed = Client().post(
        "/oauth/token/",
        {"grant_type": "refresh_token", "refresh_token": issued["refresh_token"], "client_id": client_id},
        HTTP_HOST=HOST,
    )
    assert refreshed.status_code == 200, refreshed.content
    again = AccessToken.objects.get(
        token_checksum=hashlib.sha256(refreshed.json()["access_token"].encode()).hexdigest()
    )
    assert again.resource == [READER]
    assert _initialize("/t/acme/s/reader/mcp", refreshed.json()["access_token"]).status == 200


@pytest.mark.parametrize(
    "resource",
    [
        f"{BASE}/t/acme/s/nobody/mcp",
        f"{BASE}/t/acme/s/retired/mcp",
        f"{BASE}/t/acme/s/reader/mcp/",
        f"{BASE}/t/acme/s/reader",
        "https://evil.example/t/acme/s/reader/mcp",
        f"{BASE}/t/globex/s/reader/mcp",
    ],
)
def test_only_a_servable_server_of_a_tenant_can_be_granted(client, acme, globex, browser, servers, resource):
    client_id = _registered_client_id(client)
    query = authorize_query(client_id, Pkce.new(), resource=resource)
    assert browser.get(f"/oauth/authorize/?{_urlencode(query)}", HTTP_HOST=HOST).status_code == 403


def test_a_person_who_is_not_a_member_gets_no_grant_for_a_server(client, acme, globex, browser):
    server_create(tenant=globex, slug="reader")
    client_id = _registered_client_id(client)
    query = authorize_query(client_id, Pkce.new(), resource=f"{BASE}/t/globex/s/reader/mcp")
    page = browser.get(f"/oauth/authorize/?{_urlencode(query)}", HTTP_HOST=HOST)
    assert page.status_code == 403
    assert "not a member of Globex" in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_machine_client_gets_a_token_for_a_server_of_its_tenant_only(acme, globex, servers):
    machine, secret = machine_client_create(tenant=acme, name="Nightly", scopes=["mcp:tools", "reports:read"])
    granted = client_credentials(machine.client_id, secret, resource=READER, scope="mcp:tools reports:read")
    assert granted.status_code == 200, granted.content
    token = granted.json()["access_token"]
    assert _initialize("/t/acme/s/reader/mcp", token).status == 200
    assert _initialize("/t/acme/mcp", token).status == 401
    server_create(tenant=globex, slug="reader")
    refused = client_credentials(machine.client_id, secret, resource=f"{BASE}/t/globex/s/reader/mcp")
    assert json.loads(refused.content)["error"] == "invalid_target"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_token_for_a_server_opens_it_to_members_of_its_tenant_only(acme, client_app, servers):
    # Membership is the tenant's: someone who belongs to another tenant gets nothing from a token for acme's server.
    from tests.factories import TenantFactory, UserFactory

    outsider = await sync_to_async(UserFactory)(username="mallory")
    other = await sync_to_async(TenantFactory)(slug="initech", requires_authorization=True)
    await sync_to_async(MembershipFactory)(user=outsider, tenant=other)
    token = await sync_to_async(_token)(outsider, client_app, READER)
    reply = await request(
        "POST",
        "/t/acme/s/reader/mcp",
        body=rpc("initialize", INIT_PARAMS),
        headers={"authorization": f"Bearer {token}"},
    )
    assert reply.status == 401
