"""The person's upstreams the issue-30 tests build on, on their own: the second platform instance describes itself
as the fixture says, a person's token from its real sign-in and consent pages works at its MCP endpoint, the same
token exchanged for the Notes API works there (introspection says active), every other token is refused by both,
and nothing started outlives the fixture."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.personal_upstreams import PersonalUpstream, confidential_client_create, personal_upstreams
from tests.process_marks import TEST_MARK, marked_processes

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

TEST_DEADLINE = 60.0
REQUEST_TIMEOUT = 30.0
# Another API the tenant's clients may exchange tokens for (nothing listens there: only its name matters).
CRM_URL = "http://127.0.0.1:9/crm"


@asynccontextmanager
async def mcp_client(endpoint: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=REQUEST_TIMEOUT) as http,
        Client(
            streamable_http_client(endpoint, http_client=http), cache=None, read_timeout_seconds=REQUEST_TIMEOUT
        ) as client,
    ):
        yield client


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


async def api_call(
    upstream: PersonalUpstream, method: str, path: str, token: str | None, body: dict[str, Any] | None = None
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
        return await http.request(method, f"{upstream.api.url}{path}", headers=headers, json=body)


async def test_the_instance_publishes_the_endpoints_the_fixture_names(personal_upstream: PersonalUpstream) -> None:
    upstream = personal_upstream
    with anyio.fail_after(TEST_DEADLINE):
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            metadata = (await http.get(f"{upstream.issuer}/.well-known/oauth-authorization-server")).json()
            unauthorized = await http.post(upstream.mcp_url, json={})
    assert upstream.issuer.startswith("http://localhost:")
    assert metadata["issuer"] == upstream.issuer
    assert metadata["authorization_endpoint"] == upstream.authorization_endpoint
    assert metadata["token_endpoint"] == upstream.token_endpoint
    assert metadata["introspection_endpoint"] == upstream.introspection_endpoint
    assert unauthorized.status_code == 401
    assert unauthorized.headers["www-authenticate"].startswith("Bearer ")


async def test_a_persons_token_works_at_the_mcp_endpoint_and_exchanged_at_the_notes_api(
    personal_upstream: PersonalUpstream,
) -> None:
    upstream = personal_upstream
    with anyio.fail_after(TEST_DEADLINE):
        alice = await upstream.add_person("alice")
        token = await upstream.person_token(alice, scope="mcp:tools notes:read")
        async with mcp_client(upstream.mcp_url, token) as client:
            listed = await client.list_tools()
            greeting = await client.call_tool("greet", {})
        for_api = await upstream.exchange(token, scope="notes:read")
        introspected = await upstream.introspect(for_api)
        me = await api_call(upstream, "GET", "/me", for_api)
        notes = await api_call(upstream, "GET", "/notes", for_api)
    assert sorted(tool.name for tool in listed.tools) == ["greet", "whoami"], "notes_api needs notes:write too"
    assert text_of(greeting) == f"hello from {upstream.tenant}"
    assert introspected["active"] is True
    assert introspected["aud"] == [upstream.api.url]
    assert introspected["username"] == alice.username
    assert me.status_code == 200, me.text
    assert me.json() == {
        "username": alice.username,
        "sub": introspected["sub"],
        "scope": "notes:read",
        "client_id": upstream.api_client.client_id,
        "actor": upstream.api_client.client_id,
    }
    assert notes.status_code == 200, notes.text
    assert notes.json() == [{"id": 1, "text": f"Welcome, {alice.username}."}]


async def test_a_person_signs_in_through_the_login_page(personal_upstream: PersonalUpstream) -> None:
    upstream = personal_upstream
    with anyio.fail_after(TEST_DEADLINE):
        erin = await upstream.add_person("erin")
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as browser:
            before = await browser.get(f"{upstream.issuer}/account/apps/")
            await upstream.sign_in(browser, erin)
            after = await browser.get(f"{upstream.issuer}/account/apps/")
    assert before.status_code == 302 and before.headers["location"].startswith("/account/login/")
    assert after.status_code == 200 and erin.username in after.text


async def test_a_confidential_client_its_admin_registered_gets_a_persons_token(
    personal_upstream: PersonalUpstream,
) -> None:
    upstream = personal_upstream
    with anyio.fail_after(TEST_DEADLINE):
        dave = await upstream.add_person("dave")
        client = await upstream.oauth_client_create(
            name="Another platform", redirect_uris=[upstream.redirect_uri], confidential=True
        )
        token = await upstream.person_token(dave, client=client)
        async with mcp_client(upstream.mcp_url, token) as mcp:
            greeting = await mcp.call_tool("greet", {})
    assert client.secret
    assert text_of(greeting) == f"hello from {upstream.tenant}"


async def test_whoami_names_the_person_the_call_acts_for(personal_upstream: PersonalUpstream) -> None:
    upstream = personal_upstream
    with anyio.fail_after(TEST_DEADLINE):
        bob = await upstream.add_person("bob")
        token = await upstream.person_token(bob)
        async with mcp_client(upstream.mcp_url, token) as client:
            answer = await client.call_tool("whoami", {})
    assert not answer.is_error, answer
    assert answer.structured_content == {"username": bob.username, "client_id": upstream.public_client.client_id}


async def test_tokens_introspection_does_not_vouch_for_are_refused_by_both(
    personal_upstream: PersonalUpstream,
) -> None:
    upstream = personal_upstream
    with anyio.fail_after(TEST_DEADLINE):
        carol = await upstream.add_person("carol")
        token = await upstream.person_token(carol, scope="mcp:tools notes:read notes:write")
        read_only = await upstream.exchange(token, scope="notes:read")
        writable = await upstream.exchange(token, scope="notes:read notes:write")
        unexchanged = await upstream.introspect(token)
        crm = await confidential_client_create(
            upstream.platform, upstream.tenant, name="CRM", scopes=["mcp:tools"], exchange_targets=[CRM_URL]
        )
        asked_by_another_api = await upstream.introspect(read_only, client=crm)
        at_api = {
            "no token": await api_call(upstream, "GET", "/me", None),
            "made up": await api_call(upstream, "GET", "/me", "not-a-token"),
            "not exchanged for the API": await api_call(upstream, "GET", "/me", token),
            "without notes:write": await api_call(upstream, "POST", "/notes", read_only, {"text": "x"}),
        }
        added = await api_call(upstream, "POST", "/notes", writable, {"text": "buy milk"})
        at_mcp = {
            "made up": await upstream.initialize("not-a-token"),
            "for the API": await upstream.initialize(read_only),
        }
    assert unexchanged == {"active": False}, "introspection vouches only for tokens exchanged for the caller's targets"
    assert asked_by_another_api == {"active": False}
    assert {label: answer.status_code for label, answer in at_api.items()} == {
        "no token": 401,
        "made up": 401,
        "not exchanged for the API": 401,
        "without notes:write": 403,
    }
    challenges = {label: answer.headers["www-authenticate"] for label, answer in at_api.items()}
    assert challenges["no token"].startswith("Bearer ") and "error=" not in challenges["no token"]
    assert 'error="invalid_token"' in challenges["made up"]
    assert 'error="invalid_token"' in challenges["not exchanged for the API"]
    assert 'error="insufficient_scope"' in challenges["without notes:write"]
    assert 'scope="notes:write"' in challenges["without notes:write"]
    assert added.status_code == 201 and added.json() == {"id": 2, "text": "buy milk"}
    for label, answer in at_mcp.items():
        assert answer.status_code == 401, (label, answer.text)
        assert 'error="invalid_token"' in answer.headers["www-authenticate"], label


async def test_the_notes_api_describes_its_oauth_in_its_openapi_document(personal_upstream: PersonalUpstream) -> None:
    upstream = personal_upstream
    with anyio.fail_after(TEST_DEADLINE):
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            document: dict[str, Any] = (await http.get(upstream.api.openapi_url)).json()
            resource = (await http.get(f"{upstream.api.url}/.well-known/oauth-protected-resource")).json()
    scheme = document["components"]["securitySchemes"]["notes_oauth"]
    flow = scheme["flows"]["authorizationCode"]
    assert scheme["type"] == "oauth2"
    assert flow["authorizationUrl"] == upstream.authorization_endpoint
    assert flow["tokenUrl"] == upstream.token_endpoint
    assert set(flow["scopes"]) == {"notes:read", "notes:write"}
    assert document["servers"] == [{"url": upstream.api.url}]
    operations = {op["operationId"]: op for path in document["paths"].values() for op in path.values()}
    assert operations["list_notes"]["security"] == [{"notes_oauth": ["notes:read"]}]
    assert operations["add_note"]["security"] == [{"notes_oauth": ["notes:write"]}]
    assert operations["who_am_i"]["security"] == [{"notes_oauth": []}]
    assert resource == {
        "resource": upstream.api.url,
        "authorization_servers": [upstream.issuer],
        "scopes_supported": ["notes:read", "notes:write"],
        "bearer_methods_supported": ["header"],
    }


def test_nothing_started_outlives_the_personal_upstreams(tmp_path: Path) -> None:
    with personal_upstreams(tmp_path) as upstream:
        running = marked_processes(TEST_MARK, upstream.mark)
        commands = {" ".join(command.split()[1:3]) for command in running.values()}
    assert {"manage.py serve", "-m tests.upstreams.notes_api"} <= commands, running
    assert not marked_processes(TEST_MARK, upstream.mark)
