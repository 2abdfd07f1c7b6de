"""The OAuth client the platform is to upstream authorization servers: against a real one (the platform's own,
django-oauth-toolkit, served over HTTP with a protected tenant), and against a scripted upstream that answers junk,
too much, too late, or for someone else."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import Coroutine
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from oauth2_provider.models import get_application_model

from mcp_infra.outbound import outbound_clients_close
from tenants.connections.oauth_client import (
    RESPONSE_LIMIT,
    AuthServer,
    OAuthClientError,
    RefreshRefused,
    TokenSet,
    authorization_url,
    discover_for_resource,
    discover_issuer,
    exchange_code,
    new_pkce,
    refresh_tokens,
    register_client,
    revoke_token,
)
from tests.e2e.oauth_person import Person
from tests.factories import OAuthClientFactory
from tests.tenants.connections.conftest import PASSWORD, Platform, Reply, ScriptedServer

T = TypeVar("T")
REDIRECT = "http://127.0.0.1:53682/callback"
MCP_SCOPES = "mcp:tools mcp:resources mcp:prompts"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on an event loop of its own, closing the door's clients of that loop at the end."""

    async def main() -> T:
        try:
            return await coroutine
        finally:
            await outbound_clients_close()

    return asyncio.run(main())


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


async def consent(server: AuthServer, client_id: str, platform: Platform) -> tuple[str, str]:
    """Alice signs in and allows the client on the platform's pages, over HTTP; the code and its verifier."""
    verifier, challenge = new_pkce()
    url = authorization_url(
        server,
        client_id=client_id,
        redirect_uri=REDIRECT,
        state="state-1",
        code_challenge=challenge,
        scope=MCP_SCOPES,
        resource=platform.mcp_url,
    )
    async with Person("alice", PASSWORD) as alice:
        landed = await alice.authorize(url)
    answer = query_of(landed)
    assert landed.startswith(REDIRECT) and answer["state"] == "state-1" and answer["iss"] == server.issuer
    return answer["code"], verifier


def endpoint_status(platform: Platform, access_token: str) -> int:
    """What the tenant's MCP endpoint answers an ``initialize`` carrying ``access_token``."""
    headers = {"Authorization": f"Bearer {access_token}", "Accept": "application/json, text/event-stream"}
    return httpx.post(platform.mcp_url, json=INITIALIZE, headers=headers, timeout=10).status_code


# ---- against the platform's own authorization server ------------------------------------------------------------


def test_discovery_follows_a_tenant_endpoints_challenge_to_its_authorization_server(platform: Platform) -> None:
    server, scope = run(discover_for_resource(tenant_id=platform.tenant.pk, resource_url=platform.mcp_url))

    assert server == AuthServer(
        issuer=platform.base,
        authorization_endpoint=f"{platform.base}/oauth/authorize/",
        token_endpoint=f"{platform.base}/oauth/token/",
        registration_endpoint=f"{platform.base}/oauth/register/",
        revocation_endpoint=f"{platform.base}/oauth/revoke/",
        scopes_supported=("mcp:prompts", "mcp:resources", "mcp:tools", "openid"),
        code_challenge_methods=("S256",),
        client_id_metadata_document_supported=True,
    )
    assert scope == MCP_SCOPES  # the challenge's


def test_metadata_naming_another_issuer_is_refused(platform: Platform, settings: Any) -> None:
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": "https://mcp.example.com"}
    with pytest.raises(OAuthClientError, match=r"names another issuer than http://127\.0\.0\.1"):
        run(discover_issuer(tenant_id=platform.tenant.pk, issuer=platform.base))


def test_a_registered_client_connects_refreshes_and_revokes(platform: Platform) -> None:
    tenant_id = platform.tenant.pk
    server, _ = run(discover_for_resource(tenant_id=tenant_id, resource_url=platform.mcp_url))

    client = run(register_client(tenant_id=tenant_id, server=server, redirect_uri=REDIRECT, client_name="Platform"))
    assert client.client_secret is None and client.token_endpoint_auth_method == "none"
    row = get_application_model().objects.get(client_id=client.client_id)
    assert (row.client_type, row.redirect_uris, row.name) == ("public", REDIRECT, "Platform")

    code, verifier = run(consent(server, client.client_id, platform))

    def exchange() -> Coroutine[Any, Any, TokenSet]:
        return exchange_code(
            tenant_id=tenant_id,
            server=server,
            client_id=client.client_id,
            code=code,
            code_verifier=verifier,
            redirect_uri=REDIRECT,
            resource=platform.mcp_url,
        )

    first = run(exchange())
    assert first.token_type == "Bearer" and first.refresh_token and first.expires_in == 3600
    assert set((first.scope or "").split()) == set(MCP_SCOPES.split())
    assert first.access_token not in repr(first) and first.refresh_token not in repr(first)
    assert endpoint_status(platform, first.access_token) == 200  # a token for the tenant's endpoint (RFC 8707)

    second = run(
        refresh_tokens(
            tenant_id=tenant_id,
            server=server,
            client_id=client.client_id,
            refresh_token=first.refresh_token,
            resource=platform.mcp_url,
        )
    )
    assert second.refresh_token not in (None, first.refresh_token)  # rotated
    assert endpoint_status(platform, second.access_token) == 200

    revoke = revoke_token(
        tenant_id=tenant_id,
        server=server,
        client_id=client.client_id,
        refresh_token=second.refresh_token,
        access_token=second.access_token,
    )
    assert run(revoke) is True
    assert endpoint_status(platform, second.access_token) == 401

    with pytest.raises(RefreshRefused) as refused:
        run(refresh_tokens(tenant_id=tenant_id, server=server, client_id=client.client_id, refresh_token="made-up"))
    assert refused.value.error_code == "invalid_grant" and "made-up" not in str(refused.value)

    with pytest.raises(OAuthClientError) as replayed:  # a used code: refused, but not a refused refresh
        run(exchange())
    assert replayed.value.error_code == "invalid_grant" and not isinstance(replayed.value, RefreshRefused)
    assert code not in str(replayed.value)


def test_a_refused_registration_says_why(platform: Platform) -> None:
    server, _ = run(discover_for_resource(tenant_id=platform.tenant.pk, resource_url=platform.mcp_url))
    with pytest.raises(
        OAuthClientError, match=r"refused the registration: invalid_client_metadata .*use https"
    ) as refused:
        run(
            register_client(
                tenant_id=platform.tenant.pk,
                server=server,
                redirect_uri="http://platform.example/connect/callback/",  # plain http off loopback
                client_name="Platform",
            )
        )
    assert refused.value.error_code == "invalid_client_metadata"


def test_a_confidential_client_authenticates_with_http_basic(platform: Platform) -> None:
    secret = "s3cret with spaces+plus:colon%"  # form-encoded before Basic (RFC 6749 §2.3.1)
    app = OAuthClientFactory(
        client_type="confidential", client_secret=secret, redirect_uris=REDIRECT, tenant=platform.tenant
    )
    tenant_id = platform.tenant.pk
    server = run(discover_issuer(tenant_id=tenant_id, issuer=platform.base))
    code, verifier = run(consent(server, app.client_id, platform))

    tokens = run(
        exchange_code(
            tenant_id=tenant_id,
            server=server,
            client_id=app.client_id,
            client_secret=secret,
            code=code,
            code_verifier=verifier,
            redirect_uri=REDIRECT,
            resource=platform.mcp_url,
        )
    )
    assert endpoint_status(platform, tokens.access_token) == 200
    assert tokens.refresh_token is not None
    refresh = {
        "tenant_id": tenant_id,
        "server": server,
        "client_id": app.client_id,
        "refresh_token": tokens.refresh_token,
    }

    with pytest.raises(OAuthClientError) as wrong:
        run(refresh_tokens(**refresh, client_secret="not the secret"))
    assert wrong.value.error_code == "invalid_client" and not isinstance(wrong.value, RefreshRefused)
    assert "not the secret" not in str(wrong.value)
    renewed = run(refresh_tokens(**refresh, client_secret=secret))
    assert endpoint_status(platform, renewed.access_token) == 200


# ---- the authorization request --------------------------------------------------------------------------------------

SERVER = AuthServer(
    issuer="https://as.example",
    authorization_endpoint="https://as.example/authorize?tenant=t1&state=stale",
    token_endpoint="https://as.example/token",
    code_challenge_methods=("S256",),
)


def test_pkce_pairs_are_fresh_s256_pairs() -> None:
    verifier, challenge = new_pkce()
    assert 43 <= len(verifier) <= 128 and set(verifier) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )
    assert challenge == base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert new_pkce()[0] != verifier


def test_the_authorization_url_asks_for_a_code_with_pkce_state_scope_and_resource() -> None:
    url = authorization_url(
        SERVER,
        client_id="https://platform.example/connect/client-metadata.json",
        redirect_uri="https://platform.example/connect/callback/",
        state="s t&ate",
        code_challenge="c" * 43,
        scope="read write",
        resource="https://mcp.example/mcp",
    )
    assert url.startswith("https://as.example/authorize?")
    assert parse_qs(urlsplit(url).query) == {
        "tenant": ["t1"],  # the endpoint's own query is kept (RFC 6749 §3.1)
        "response_type": ["code"],
        "client_id": ["https://platform.example/connect/client-metadata.json"],
        "redirect_uri": ["https://platform.example/connect/callback/"],
        "state": ["s t&ate"],  # once: the endpoint's stale one is replaced
        "code_challenge": ["c" * 43],
        "code_challenge_method": ["S256"],
        "scope": ["read write"],
        "resource": ["https://mcp.example/mcp"],
    }
    bare = authorization_url(
        SERVER, client_id="c", redirect_uri="https://p.example/cb", state="s", code_challenge="x" * 43
    )
    assert "scope" not in query_of(bare) and "resource" not in query_of(bare)


def test_a_server_without_s256_is_refused_but_one_that_does_not_say_is_not() -> None:
    arguments: dict[str, Any] = {"client_id": "c", "redirect_uri": "https://p.example/cb", "state": "s"}
    plain_only = AuthServer(**{**SERVER.to_json(), "code_challenge_methods": ("plain",), "scopes_supported": ()})
    with pytest.raises(OAuthClientError, match="does not support PKCE with S256"):
        authorization_url(plain_only, code_challenge="x" * 43, **arguments)
    silent = AuthServer("https://as.example", "https://as.example/authorize", "https://as.example/token")
    assert query_of(authorization_url(silent, code_challenge="x" * 43, **arguments))["code_challenge_method"] == "S256"


def test_a_server_is_stored_as_json_and_read_back_checked() -> None:
    stored = json.loads(json.dumps(SERVER.to_json()))
    assert AuthServer.from_json(stored) == SERVER
    for junk in (
        "https://as.example",
        {**stored, "token_endpoint": "javascript:alert(1)"},
        {**stored, "issuer": "https://as.example?x=1"},
        {**stored, "scopes_supported": "read write"},
        {**stored, "client_id_metadata_document_supported": "yes"},
    ):
        with pytest.raises(OAuthClientError):
            AuthServer.from_json(junk)


# ---- a scripted upstream: discovery ---------------------------------------------------------------------------------


def json_reply(document: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(status, json.dumps(document).encode(), {"Content-Type": "application/json", **headers})


def as_metadata(issuer: str, **overrides: Any) -> dict[str, Any]:
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/authorize",
        "token_endpoint": f"{issuer}/token",
        "revocation_endpoint": f"{issuer}/revoke",
        "code_challenge_methods_supported": ["S256"],
        **overrides,
    }


def paths(upstream: ScriptedServer) -> list[str]:
    return [f"{method} {path}" for method, path, _, _ in upstream.requests]


def test_a_challenge_among_others_names_the_metadata_and_scope(
    upstream: ScriptedServer, loopback_allowed: None
) -> None:
    base = upstream.base
    challenge = f'DPoP algs="ES256", Bearer error="invalid_token", resource_metadata="{base}/prm", scope="files:read"'
    upstream.routes["/mcp"] = json_reply({}, 401, **{"WWW-Authenticate": challenge})
    upstream.routes["/prm"] = json_reply({"resource": f"{base}/mcp", "authorization_servers": [f"{base}/"]})
    upstream.routes["/.well-known/oauth-authorization-server"] = json_reply(as_metadata(base))

    server, scope = run(discover_for_resource(tenant_id=1, resource_url=f"{base}/mcp"))
    assert (server.issuer, server.token_endpoint, scope) == (f"{base}/", f"{base}/token", "files:read")
    assert paths(upstream) == ["POST /mcp", "GET /prm", "GET /.well-known/oauth-authorization-server"]


def test_without_a_challenge_the_well_known_uris_are_tried_path_first(
    upstream: ScriptedServer, loopback_allowed: None
) -> None:
    base = upstream.base
    upstream.routes["/api/mcp"] = json_reply({"jsonrpc": "2.0", "id": 0, "result": {}})  # asks for nothing
    # Only the root document: it describes the origin (RFC 9728 §3.3). Its scopes are the ones to ask for.
    upstream.routes["/.well-known/oauth-protected-resource"] = json_reply(
        {"resource": base, "authorization_servers": [f"{base}/tenant1"], "scopes_supported": ["a", "b"]}
    )
    upstream.routes["/tenant1/.well-known/openid-configuration"] = json_reply(as_metadata(f"{base}/tenant1"))

    server, scope = run(discover_for_resource(tenant_id=1, resource_url=f"{base}/api/mcp"))
    assert (server.issuer, scope) == (f"{base}/tenant1", "a b")
    assert paths(upstream) == [
        "POST /api/mcp",
        "GET /.well-known/oauth-protected-resource/api/mcp",
        "GET /.well-known/oauth-protected-resource",
        "GET /.well-known/oauth-authorization-server/tenant1",
        "GET /.well-known/openid-configuration/tenant1",
        "GET /tenant1/.well-known/openid-configuration",
    ]


def test_resource_metadata_for_another_resource_is_refused(upstream: ScriptedServer, loopback_allowed: None) -> None:
    base = upstream.base
    upstream.routes["/mcp"] = json_reply({}, 401, **{"WWW-Authenticate": f'Bearer resource_metadata="{base}/prm"'})
    upstream.routes["/prm"] = json_reply({"resource": f"{base}/other", "authorization_servers": [base]})
    with pytest.raises(OAuthClientError, match="describes another resource"):
        run(discover_for_resource(tenant_id=1, resource_url=f"{base}/mcp"))


def test_a_resource_without_metadata_says_where_it_looked(upstream: ScriptedServer, loopback_allowed: None) -> None:
    with pytest.raises(OAuthClientError, match=r"publishes no resource metadata \(.*/mcp: HTTP 404; .*: HTTP 404\)"):
        run(discover_for_resource(tenant_id=1, resource_url=f"{upstream.base}/mcp"))


JUNK_METADATA = {
    "not JSON": (b"<html>hello</html>", "is not JSON"),
    "not an object": (b"[1, 2]", "is not a JSON object"),
    "nested past the parser": (b"[" * 60_000 + b"]" * 4_000, "is not JSON"),
    "too large": (b'{"issuer": "' + b"x" * RESPONSE_LIMIT + b'"}', "answered more than 64 KiB"),
}
JUNK_FIELDS = {
    "token_endpoint a number": ({"token_endpoint": 5}, "token_endpoint is not an http"),
    "authorization_endpoint a script": ({"authorization_endpoint": "javascript:alert(1)"}, "authorization_endpoint"),
    "registration_endpoint a file": ({"registration_endpoint": "file:///etc/passwd"}, "registration_endpoint"),
    "scopes a string": ({"scopes_supported": "read write"}, "scopes_supported must be a list"),
    "methods not strings": ({"code_challenge_methods_supported": [1]}, "code_challenge_methods_supported must"),
    "flag a string": ({"client_id_metadata_document_supported": "yes"}, "must be true or false"),
    "endpoint with a line break": ({"token_endpoint": "https://as.example/\r\nX: y"}, "token_endpoint"),
}


@pytest.mark.parametrize(("body", "message"), JUNK_METADATA.values(), ids=JUNK_METADATA.keys())
def test_junk_or_oversized_metadata_is_a_clear_error(
    upstream: ScriptedServer, loopback_allowed: None, body: bytes, message: str
) -> None:
    upstream.routes["/.well-known/oauth-authorization-server"] = Reply(200, body)
    with pytest.raises(OAuthClientError, match=message):
        run(discover_issuer(tenant_id=1, issuer=upstream.base))


@pytest.mark.parametrize(("fields", "message"), JUNK_FIELDS.values(), ids=JUNK_FIELDS.keys())
def test_metadata_fields_of_the_wrong_kind_are_named(
    upstream: ScriptedServer, loopback_allowed: None, fields: dict[str, Any], message: str
) -> None:
    upstream.routes["/.well-known/oauth-authorization-server"] = json_reply(as_metadata(upstream.base, **fields))
    with pytest.raises(OAuthClientError, match=f"metadata at .*{message}"):
        run(discover_issuer(tenant_id=1, issuer=upstream.base))


def test_the_outbound_door_decides_what_may_be_reached(upstream: ScriptedServer, db: None) -> None:
    upstream.routes["/.well-known/oauth-authorization-server"] = json_reply(as_metadata(upstream.base))
    with pytest.raises(OAuthClientError, match="refused"):
        run(discover_issuer(tenant_id=1, issuer=upstream.base))  # loopback, not allowed here
    assert upstream.requests == []


# ---- a scripted upstream: the token endpoint and revocation ---------------------------------------------------------


def scripted_server(upstream: ScriptedServer) -> AuthServer:
    return AuthServer.from_json(
        {**as_metadata(upstream.base), "code_challenge_methods": ["S256"], "registration_endpoint": None}
    )


def refresh_at(upstream: ScriptedServer, **more: str) -> TokenSet:
    server = scripted_server(upstream)
    return run(refresh_tokens(tenant_id=1, server=server, client_id="c1", refresh_token="rt-sent-0123456789", **more))


def test_a_token_answer_is_read_as_its_rfc_says(upstream: ScriptedServer, loopback_allowed: None) -> None:
    answer = {"access_token": "at-1", "token_type": "bearer", "expires_in": "600", "scope": "a b"}
    upstream.routes["/token"] = json_reply(answer)
    tokens = refresh_at(upstream, resource="https://mcp.example/mcp", scope="a")
    assert (tokens.access_token, tokens.refresh_token, tokens.expires_in, tokens.scope) == ("at-1", None, 600, "a b")
    _, _, headers, body = upstream.requests[0]
    assert parse_qs(body.decode()) == {
        "grant_type": ["refresh_token"],
        "refresh_token": ["rt-sent-0123456789"],
        "scope": ["a"],
        "resource": ["https://mcp.example/mcp"],  # RFC 8707, in token requests too
        "client_id": ["c1"],
    }
    assert "Authorization" not in headers  # a public client


TOKEN_JUNK = {
    "no access token": (json_reply({"token_type": "Bearer"}), "has no access_token"),
    "a DPoP token": (json_reply({"access_token": "a", "token_type": "DPoP"}), "not a Bearer token"),
    "a token with a line break": (json_reply({"access_token": "a\r\nb", "token_type": "Bearer"}), "no access_token"),
    "a negative lifetime": (json_reply({"access_token": "a", "expires_in": -1}), "expires_in"),
    "a server error page": (Reply(502, b"<h1>Bad gateway</h1>", {"Content-Type": "text/html"}), "refused: HTTP 502"),
    "a redirect": (Reply(307, b"", {"Location": "/elsewhere"}), "answered with a redirect"),
    "too much": (Reply(200, b" " * (RESPONSE_LIMIT + 1)), "more than 64 KiB"),
}


@pytest.mark.parametrize(("reply", "message"), TOKEN_JUNK.values(), ids=TOKEN_JUNK.keys())
def test_a_token_endpoint_answering_junk_is_a_clear_error(
    upstream: ScriptedServer, loopback_allowed: None, reply: Reply, message: str
) -> None:
    upstream.routes["/token"] = reply
    upstream.routes["/elsewhere"] = json_reply({"access_token": "followed", "token_type": "Bearer"})
    with pytest.raises(OAuthClientError, match=message) as failed:
        refresh_at(upstream)
    assert not isinstance(failed.value, RefreshRefused)
    assert paths(upstream) == ["POST /token"]  # never a redirect followed


def test_an_error_description_repeating_the_token_is_not_shown(
    upstream: ScriptedServer, loopback_allowed: None
) -> None:
    echo = {"error": "invalid_grant", "error_description": "refresh token rt-sent-0123456789 is expired"}
    upstream.routes["/token"] = json_reply(echo, 400)
    with pytest.raises(RefreshRefused) as refused:
        refresh_at(upstream)
    assert str(refused.value).endswith("refused: invalid_grant")

    upstream.routes["/token"] = json_reply({"error": "invalid_grant", "error_description": "expired\x1b[2J"}, 400)
    with pytest.raises(RefreshRefused, match=r"refused: invalid_grant \(expired\[2J\)$"):
        refresh_at(upstream)


def test_an_upstream_that_keeps_the_platform_waiting_is_given_up_on(
    upstream: ScriptedServer, loopback_allowed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tenants.connections.oauth_client.wire.REQUEST_SECONDS", 0.3)
    upstream.routes["/token"] = Reply(200, b'{"access_token": "late"}', delay=2.0)
    with pytest.raises(OAuthClientError, match=r"did not answer within 0\.3 s"):
        refresh_at(upstream)


def test_revocation_never_raises_and_says_whether_it_was_accepted(
    upstream: ScriptedServer, loopback_allowed: None
) -> None:
    server = scripted_server(upstream)

    def revoke(on: AuthServer = server, **tokens: str) -> bool:
        return run(revoke_token(tenant_id=1, server=on, client_id="c1", client_secret="cs", **tokens))

    upstream.routes["/revoke"] = Reply(200, b"")
    assert revoke(refresh_token="rt", access_token="at") is True
    hints = [parse_qs(body.decode())["token_type_hint"][0] for _, _, _, body in upstream.requests]
    assert hints == ["refresh_token", "access_token"]
    assert all(headers["Authorization"].startswith("Basic ") for _, _, headers, _ in upstream.requests)

    upstream.routes["/revoke"] = Reply(503, b"down")
    assert revoke(refresh_token="rt") is False
    assert revoke() is False  # nothing to revoke
    assert revoke(AuthServer.from_json({**server.to_json(), "revocation_endpoint": None}), access_token="at") is False
    closed = AuthServer.from_json({**server.to_json(), "revocation_endpoint": "http://127.0.0.1:9/revoke"})
    assert revoke(closed, access_token="at") is False
