"""A tenant's named servers through the whole ASGI stack: each serves only its selection, in the 2026-07-28 era, the
handshake era and on the 2024-11-05 transport, under its own name, while the default endpoint keeps serving all."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from tenants import servers, services
from tenants.models import Server, Tenant
from tests.factories import MembershipFactory, OAuthClientFactory, UserFactory, access_token_create
from tests.gateway.conftest import INIT_PARAMS, request, rpc
from tests.gateway.in_process import ORIGIN, in_process_client
from tests.gateway.test_stateless import call
from tests.gateway.test_stream_access import Stream

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

READER = "/t/acme/s/reader/mcp"
DEFAULT = "/t/acme/mcp"


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def curated_catalog(tenant: Tenant) -> Server:
    """Acme's catalog, and the server "reader" that selects its read-only tools, one resource, one template and one
    prompt; "retired" is a disabled server."""
    services.tool_create(tenant=tenant, name="search", config=_text("found"), tags=["read-only"])
    services.tool_create(tenant=tenant, name="lookup", config=_text("looked up"), tags=["read-only", "billing"])
    services.tool_create(tenant=tenant, name="delete_all", config=_text("deleted"))
    services.resource_create(tenant=tenant, uri="docs://readme", name="readme", text="Read me.")
    services.resource_create(tenant=tenant, uri="docs://secret", name="secret", text="Not for readers.")
    services.resource_template_create(
        tenant=tenant, name="pages", uri_template="pages://{page}", config={"text": "Page {page}"}
    )
    services.resource_template_create(
        tenant=tenant, name="drafts", uri_template="drafts://{draft}", config={"text": "Draft {draft}"}
    )
    hello = [{"role": "user", "content": {"type": "text", "text": "Hello"}}]
    services.prompt_create(tenant=tenant, name="triage", messages=hello, completions={})
    services.prompt_create(tenant=tenant, name="escalate", messages=hello)
    servers.server_create(tenant=tenant, slug="retired", enabled=False, selection=["tag:read-only"])
    return servers.server_create(
        tenant=tenant,
        slug="reader",
        title="Acme reader",
        instructions="Only reads.",
        selection=["tag:read-only", "resources:docs://readme", "templates:pages://{page}", "prompts:triage"],
    )


@pytest.fixture
def acme(transactional_db: None) -> Tenant:
    tenant = services.tenant_create(slug="acme", name="Acme", instructions="Everything.")
    curated_catalog(tenant)
    return tenant


def names(result: dict[str, Any], kind: str, key: str = "name") -> list[str]:
    return [item[key] for item in result[kind]]


async def test_a_server_lists_only_its_selection_and_the_default_endpoint_lists_everything(acme: Tenant) -> None:
    curated = (await call("tools/list", path=READER)).json()["result"]
    everything = (await call("tools/list", path=DEFAULT)).json()["result"]
    assert names(curated, "tools") == ["lookup", "search"]
    assert names(everything, "tools") == ["delete_all", "lookup", "search"]
    resources = (await call("resources/list", path=READER)).json()["result"]
    templates = (await call("resources/templates/list", path=READER)).json()["result"]
    prompts = (await call("prompts/list", path=READER)).json()["result"]
    assert names(resources, "resources", "uri") == ["docs://readme"]
    assert names(templates, "resourceTemplates", "uriTemplate") == ["pages://{page}"]
    assert names(prompts, "prompts") == ["triage"]


async def test_an_item_outside_the_selection_is_unknown_on_the_server(acme: Tenant) -> None:
    called = await call("tools/call", {"name": "search", "arguments": {}}, path=READER)
    assert called.json()["result"]["content"][0]["text"] == "found"
    refused = await call("tools/call", {"name": "delete_all", "arguments": {}}, path=READER)
    assert refused.json()["error"]["message"] == "Unknown tool: delete_all"
    assert (await call("tools/call", {"name": "delete_all", "arguments": {}}, path=DEFAULT)).status == 200
    secret = await call("resources/read", {"uri": "docs://secret"}, path=READER)
    assert secret.json()["error"]["message"] == "Resource not found"
    page = await call("resources/read", {"uri": "pages://intro"}, path=READER)
    assert page.json()["result"]["contents"][0]["text"] == "Page intro"
    draft = await call("resources/read", {"uri": "drafts://one"}, path=READER)
    assert "error" in draft.json()
    prompt = await call("prompts/get", {"name": "escalate"}, path=READER)
    assert prompt.json()["error"]["message"] == "Unknown prompt: escalate"
    completion = await call(
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "escalate"}, "argument": {"name": "x", "value": ""}},
        path=READER,
    )
    assert "error" in completion.json()


async def test_a_server_says_who_it_is(acme: Tenant) -> None:
    discovered = (await call("server/discover", path=READER)).json()["result"]
    info = discovered["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert (info["name"], info["title"]) == ("mcp-platform/acme/reader", "Acme reader")
    assert discovered["instructions"] == "Only reads."
    default = (await call("server/discover", path=DEFAULT)).json()["result"]
    assert default["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-platform/acme"
    assert default["instructions"] == "Everything."


async def test_unknown_and_disabled_servers_are_not_found(acme: Tenant) -> None:
    for path in ("/t/acme/s/nobody/mcp", "/t/acme/s/retired/mcp", "/t/acme/s/retired/sse", "/t/acme/s/UPPER!/mcp"):
        reply = await call("tools/list", path=path)
        assert reply.status == 404, path
        assert reply.json()["error"]["message"] == "Unknown server", path


async def handshake(path: str) -> tuple[str, dict[str, Any]]:
    reply = await request("POST", path, body=rpc("initialize", INIT_PARAMS))
    assert reply.status == 200, reply.body
    session = reply.headers["mcp-session-id"]
    done = await request(
        "POST", path, body=rpc("notifications/initialized", id=None), headers={"mcp-session-id": session}
    )
    assert done.status == 202
    return session, reply.json()["result"]


async def test_a_handshake_session_on_a_server_serves_its_selection_and_belongs_to_it(acme: Tenant) -> None:
    session, result = await handshake(READER)
    assert result["serverInfo"]["name"] == "mcp-platform/acme/reader"
    assert result["instructions"] == "Only reads."
    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    listed = await request("POST", READER, body=rpc("tools/list", {}, id=2), headers=headers)
    assert names(listed.messages()[0]["result"], "tools") == ["lookup", "search"]
    called = await request(
        "POST", READER, body=rpc("tools/call", {"name": "delete_all", "arguments": {}}, id=3), headers=headers
    )
    assert called.messages()[0]["error"]["message"] == "Unknown tool: delete_all"
    # The session is the server's: the default endpoint (or another server) does not know it, nor the reverse.
    assert (await request("POST", DEFAULT, body=rpc("tools/list", {}, id=4), headers=headers)).status == 404
    other, _ = await handshake(DEFAULT)
    moved = {"mcp-session-id": other, "mcp-protocol-version": "2025-11-25"}
    assert (await request("POST", READER, body=rpc("tools/list", {}, id=5), headers=moved)).status == 404


async def test_the_2024_11_05_transport_on_a_server_hands_out_its_own_messages_endpoint(acme: Tenant) -> None:
    stream = Stream("GET", "/t/acme/s/reader/sse", {"accept": "text/event-stream"})
    assert await stream.open() == 200
    await stream.until(lambda: "event: endpoint" in stream.text)
    endpoint = stream.text.split("data: ", 1)[1].split("\n", 1)[0].strip()
    assert endpoint.startswith("/t/acme/s/reader/messages?session_id=")
    initialize = rpc("initialize", {**INIT_PARAMS, "protocolVersion": "2024-11-05"})
    assert (await request("POST", endpoint, body=initialize)).status == 202
    # As a client does: the answer to initialize first (on the production path it comes through Redis, later than
    # the 202), then initialized.
    await stream.until(lambda: '"id": 1' in stream.text or '"id":1' in stream.text)
    assert (await request("POST", endpoint, body=rpc("notifications/initialized", id=None))).status == 202
    assert (await request("POST", endpoint, body=rpc("tools/list", {}, id=2))).status == 202
    await stream.until(lambda: '"id": 2' in stream.text or '"id":2' in stream.text)
    messages = [
        json.loads(line[len("data: ") :])
        for line in stream.text.splitlines()
        if line.startswith("data: {") and '"jsonrpc"' in line
    ]
    by_id = {m["id"]: m for m in messages if "id" in m}
    assert by_id[1]["result"]["serverInfo"]["name"] == "mcp-platform/acme/reader"
    assert names(by_id[2]["result"], "tools") == ["lookup", "search"]
    # The session's messages endpoint is the server's: the tenant's own does not find it.
    session_id = endpoint.split("session_id=", 1)[1]
    assert (await request("POST", f"/t/acme/messages?session_id={session_id}", body=rpc("ping", id=3))).status == 404
    await stream.communicator.send_input({"type": "http.disconnect"})


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_sdk_client_sees_a_protected_servers_selection_with_its_token(
    transactional_db: None, mode: str
) -> None:
    def protected() -> str:
        tenant = services.tenant_create(slug="acme", name="Acme", requires_authorization=True)
        curated_catalog(tenant)
        alice = UserFactory(username="alice")
        MembershipFactory(user=alice, tenant=tenant)
        resource = f"{ORIGIN}{READER}"
        return access_token_create(user=alice, application=OAuthClientFactory(name="Claude"), resource=[resource])

    token = await sync_to_async(protected)()
    async with in_process_client(READER, headers={"authorization": f"Bearer {token}"}, mode=mode) as client:
        tools = await client.list_tools()
        called = await client.call_tool("lookup", {})
    assert sorted(tool.name for tool in tools.tools) == ["lookup", "search"]
    assert called.content[0].text == "looked up"
