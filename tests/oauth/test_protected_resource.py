"""Tenant endpoints as protected resources: metadata, 401 challenges, audience-bound bearer tokens."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from mcp_infra.addresses import base_url_from_scope
from mcp_platform.gateway.middleware import GatewayMiddleware
from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, UserFactory, access_token_create
from tests.gateway.conftest import INIT_PARAMS, request, rpc
from tests.oauth.conftest import ACME_MCP, BASE

MCP = "/t/acme/mcp"
METADATA = "/.well-known/oauth-protected-resource/t/acme/mcp"


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


token_for = sync_to_async(access_token_create)


# ---- metadata ----------------------------------------------------------------------------------------


def test_metadata_names_the_exact_endpoint_and_the_authorization_server(client, acme):
    response = client.get(METADATA, HTTP_HOST="127.0.0.1:8000")
    assert response.status_code == 200
    document = response.json()
    assert document["resource"] == ACME_MCP
    assert document["authorization_servers"] == [BASE]
    assert document["scopes_supported"] == ["mcp:tools", "mcp:resources", "mcp:prompts"]
    assert document["bearer_methods_supported"] == ["header"]
    assert document["resource_name"] == "Acme"


def test_metadata_uses_the_public_base_url_when_configured(client, acme, settings):
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "PUBLIC_BASE_URL": "https://mcp.example.com/"}
    document = client.get(METADATA, HTTP_HOST="127.0.0.1:8000").json()
    assert document["resource"] == "https://mcp.example.com/t/acme/mcp"


def test_metadata_of_an_unknown_tenant_is_404(client, db):
    assert client.get("/.well-known/oauth-protected-resource/t/nobody/mcp").status_code == 404


# ---- challenges and tokens ---------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_request_without_token_gets_401_pointing_at_the_metadata(acme):
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS))
    assert reply.status == 401
    challenge = reply.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{BASE}{METADATA}"' in challenge
    assert 'scope="mcp:tools mcp:resources mcp:prompts"' in challenge
    assert "error=" not in challenge


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_member_token_for_this_endpoint_is_accepted(acme, member, client_app):
    token = await token_for(user=member, application=client_app, resource=[ACME_MCP])
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers=_bearer(token))
    assert reply.status == 200
    assert reply.json()["result"]["serverInfo"]["name"].endswith("/acme")


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "header",
    ["Bearer not-a-token", "Basic YWxpY2U6c2VjcmV0", "Bearer", "bearer  "],
)
async def test_unknown_or_malformed_credentials_get_invalid_token_or_a_plain_challenge(acme, header):
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers={"authorization": header})
    assert reply.status == 401
    if header == "Bearer not-a-token":
        assert 'error="invalid_token"' in reply.headers["www-authenticate"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_expired_token_is_rejected(acme, member, client_app):
    token = await token_for(user=member, application=client_app, resource=[ACME_MCP], expires_in=-1)
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers=_bearer(token))
    assert reply.status == 401
    assert 'error="invalid_token"' in reply.headers["www-authenticate"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_token_for_other_tenant_is_rejected(acme, globex, member, client_app):
    await sync_to_async(MembershipFactory)(user=member, tenant=globex)
    token = await token_for(user=member, application=client_app, resource=[f"{BASE}/t/globex/mcp"])
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers=_bearer(token))
    assert reply.status == 401
    assert 'error="invalid_token"' in reply.headers["www-authenticate"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_token_without_an_audience_is_rejected(acme, member, client_app):
    token = await token_for(user=member, application=client_app, resource=[])
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers=_bearer(token))
    assert reply.status == 401


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_token_of_a_user_who_left_the_tenant_is_rejected(acme, client_app):
    outsider = await sync_to_async(UserFactory)(username="mallory")
    token = await token_for(user=outsider, application=client_app, resource=[ACME_MCP])
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers=_bearer(token))
    assert reply.status == 401


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_client_bound_to_another_tenant_cannot_use_its_token_here(acme, globex, member):
    globex_client = await sync_to_async(OAuthClientFactory)(tenant=globex)
    token = await token_for(user=member, application=globex_client, resource=[ACME_MCP])
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers=_bearer(token))
    assert reply.status == 401


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_token_in_the_query_string_is_not_accepted(acme, member, client_app):
    token = await token_for(user=member, application=client_app, resource=[ACME_MCP])
    reply = await request("POST", f"{MCP}?access_token={token}", body=rpc("initialize", INIT_PARAMS))
    assert reply.status == 401


# ---- the 2024-11-05 transport (/sse and the /messages it hands out) ------------------------------------

ACME_SSE = f"{BASE}/t/acme/sse"
SSE_METADATA = f"{BASE}/.well-known/oauth-protected-resource/t/acme/sse"


@pytest.mark.parametrize("endpoint", ["sse", "messages"])
def test_each_legacy_endpoint_has_metadata_naming_itself(client, acme, endpoint):
    """RFC 9728 §3.3: the ``resource`` is the URL the metadata's well-known path was built from."""
    response = client.get(f"/.well-known/oauth-protected-resource/t/acme/{endpoint}", HTTP_HOST="127.0.0.1:8000")
    assert response.status_code == 200
    document = response.json()
    assert document["resource"] == f"{BASE}/t/acme/{endpoint}"
    assert document["authorization_servers"] == [BASE]
    assert document["scopes_supported"] == ["mcp:tools", "mcp:resources", "mcp:prompts"]


@pytest.mark.parametrize("path", ["/t/acme/other", "/t/nobody/sse", "/t/acme/sse/"])
def test_there_is_no_metadata_for_what_is_not_an_endpoint(client, acme, path):
    assert client.get(f"/.well-known/oauth-protected-resource{path}", HTTP_HOST="127.0.0.1:8000").status_code == 404


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_legacy_sse_endpoint_of_a_protected_tenant_points_at_its_own_metadata(acme):
    reply = await request("GET", "/t/acme/sse", headers={"accept": "text/event-stream"})
    assert reply.status == 401
    assert f'resource_metadata="{SSE_METADATA}"' in reply.headers["www-authenticate"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_messages_refusal_points_at_the_sse_metadata_the_client_connected_through(acme):
    """SDK clients check the metadata's ``resource`` against the ``/sse`` URL they were given, also when a
    ``/messages`` POST is refused (a token that expired mid-session)."""
    reply = await request("POST", "/t/acme/messages?session_id=x", body=rpc("ping"))
    assert reply.status == 401
    assert f'resource_metadata="{SSE_METADATA}"' in reply.headers["www-authenticate"]


AUDIENCES = {
    "mcp": ACME_MCP,
    "sse": ACME_SSE,
    "messages": f"{BASE}/t/acme/messages",
    "other tenant's sse": f"{BASE}/t/globex/sse",
    "other origin's sse": "https://elsewhere.example/t/acme/sse",
}
ACCEPTED = {
    "mcp": {"mcp"},
    "sse": {"mcp", "sse", "messages"},
    "messages": {"mcp", "sse", "messages"},
}


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("endpoint", sorted(ACCEPTED))
async def test_which_audiences_each_endpoint_accepts(acme, globex, member, client_app, endpoint):
    """/mcp takes only its own tokens; the 2024-11-05 transport takes tokens for its two URLs and for the
    tenant's /mcp (one server); nothing of another tenant or origin."""
    from mcp_platform.oauth.resource import Principal, aauthenticate

    outcomes = {}
    for label, audience in AUDIENCES.items():
        token = await token_for(user=member, application=client_app, resource=[audience])
        outcome = await aauthenticate(tenant=acme, authorization=f"Bearer {token}", base_url=BASE, endpoint=endpoint)
        outcomes[label] = isinstance(outcome, Principal)
    assert {label for label, accepted in outcomes.items() if accepted} == ACCEPTED[endpoint]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_an_sse_token_opens_the_sse_stream_and_is_refused_on_mcp(acme, member, client_app):
    token = await token_for(user=member, application=client_app, resource=[ACME_SSE])
    on_mcp = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers=_bearer(token))
    assert on_mcp.status == 401
    assert 'error="invalid_token"' in on_mcp.headers["www-authenticate"]
    # Past the bearer check: an unknown session is the transport's 404, not the middleware's 401.
    on_messages = await request("POST", "/t/acme/messages?session_id=nope", body=rpc("ping"), headers=_bearer(token))
    assert on_messages.status == 404


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_public_tenant_needs_no_token(db):
    await sync_to_async(TenantFactory)(slug="demo")
    reply = await request("POST", "/t/demo/mcp", body=rpc("initialize", INIT_PARAMS))
    assert reply.status == 200


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_principal_is_attached_to_the_scope_and_the_token_goes_no_further(acme, member, client_app):
    token = await token_for(user=member, application=client_app, resource=[ACME_MCP], scope="mcp:tools")
    seen: dict[str, Any] = {}

    async def inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.update(scope)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    messages: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": MCP,
        "headers": [(b"host", b"127.0.0.1:8000"), (b"authorization", f"Bearer {token}".encode())],
    }
    await GatewayMiddleware(inner)(scope, receive, send)
    principal = seen["mcp.principal"]
    assert principal.user_id == member.pk
    assert principal.client_id == client_app.client_id
    assert principal.scopes == frozenset({"mcp:tools"})
    # Nothing behind the middleware (consumers, tools, backends) can pass the client's token on.
    assert all(name != b"authorization" for name, _ in seen["headers"])


@pytest.mark.parametrize(("forwarded", "scheme"), [("https", "https"), ("http", "http"), (None, "http")])
def test_behind_a_tls_proxy_the_gateway_and_the_server_agree_on_the_scheme(client, acme, settings, forwarded, scheme):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    headers = [(b"host", b"127.0.0.1:8000")] + ([(b"x-forwarded-proto", forwarded.encode())] if forwarded else [])
    gateway_view = base_url_from_scope({"type": "http", "scheme": "http", "headers": headers})
    extra = {"HTTP_X_FORWARDED_PROTO": forwarded} if forwarded else {}
    document = client.get(METADATA, HTTP_HOST="127.0.0.1:8000", **extra).json()
    assert gateway_view == f"{scheme}://127.0.0.1:8000"
    assert document["resource"] == f"{gateway_view}/t/acme/mcp"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_session_is_found_only_with_a_token_of_the_principal_that_started_it(acme, member, client_app):
    bob = await sync_to_async(UserFactory)(username="bob")
    await sync_to_async(MembershipFactory)(user=bob, tenant=acme)
    other_app = await sync_to_async(OAuthClientFactory)(name="Cursor")
    alice_token = await token_for(user=member, application=client_app, resource=[ACME_MCP])
    started = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers=_bearer(alice_token))
    session = {"mcp-session-id": started.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    ping = rpc("ping", id=2)

    own = await request("POST", MCP, body=ping, headers={**_bearer(alice_token), **session})
    assert own.status == 200
    for user, app in ((bob, client_app), (member, other_app)):
        token = await token_for(user=user, application=app, resource=[ACME_MCP])
        foreign = await request("POST", MCP, body=ping, headers={**_bearer(token), **session})
        assert foreign.status == 404, (user, app)
    refreshed = await token_for(user=member, application=client_app, resource=[ACME_MCP])
    assert (await request("POST", MCP, body=ping, headers={**_bearer(refreshed), **session})).status == 200
