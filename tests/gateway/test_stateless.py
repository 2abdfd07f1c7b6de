"""The 2026-07-28 era on a tenant endpoint, through the whole ASGI stack: envelope errors and their HTTP
statuses, mirrored headers, discovery, cache hints, request-scoped SSE, and cancellation by disconnect."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from mcp_core.context import ToolContext
from tenants.backends.registry import python_prompt, python_tool
from tenants.builtin.conformance import input_required_prompt
from tests.gateway.conftest import META, OpenStream, V, request, rpc

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

MCP = "/t/conformance/mcp"
NAME_SOURCES = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

_cancelled = asyncio.Event()


# The conformance prompt that asks for context, under a name of its own: conformance.* is the conformance
# tenant's alone, and these tests use another tenant.
python_prompt("tests.gateway.input_required_prompt")(input_required_prompt)


@python_tool("tests.gateway.waits_forever")
async def waits_forever(ctx: ToolContext) -> str:
    await ctx.log("info", "started")
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        _cancelled.set()
        raise
    return "never"


def standard_headers(method: str, params: dict[str, Any] | None) -> dict[str, str]:
    headers = {"mcp-protocol-version": V, "mcp-method": method}
    source = NAME_SOURCES.get(method)
    if source and params and isinstance(params.get(source), str):
        headers["mcp-name"] = params[source]
    return headers


async def call(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    meta: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    id: int = 7,
    path: str = MCP,
):
    body_params = {**(params or {}), "_meta": META if meta is None else meta}
    overridden = {name.lower() for name in headers or {}}
    sent = {k: v for k, v in standard_headers(method, body_params).items() if k not in overridden} | (headers or {})
    return await request("POST", path, body=rpc(method, body_params, id=id), headers=sent)


async def test_discover_answers_versions_capabilities_identity_and_cache_hints(conformance):
    reply = await call("server/discover")
    assert reply.status == 200
    result = reply.json()["result"]
    assert result["supportedVersions"][0] == V and "2025-11-25" in result["supportedVersions"]
    assert set(result["capabilities"]) >= {"tools", "resources", "prompts"}
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-platform/conformance"
    assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == ("complete", 60_000, "private")
    assert "mcp-session-id" not in reply.headers


@pytest.mark.parametrize(
    "meta",
    [
        {},
        {k: v for k, v in META.items() if k != "io.modelcontextprotocol/protocolVersion"},
        {k: v for k, v in META.items() if k != "io.modelcontextprotocol/clientCapabilities"},
    ],
)
async def test_missing_required_meta_is_invalid_params_with_400_and_the_request_id(conformance, meta):
    reply = await call("server/discover", meta=meta, id=101)
    assert reply.status == 400
    assert reply.json()["id"] == 101
    assert reply.json()["error"]["code"] == -32602


async def test_client_info_may_be_left_out(conformance):
    meta = {k: v for k, v in META.items() if k != "io.modelcontextprotocol/clientInfo"}
    assert (await call("server/discover", meta=meta)).status == 200


async def test_unsupported_version_is_400_with_the_supported_list(conformance):
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "v999.0.0"}
    reply = await call("server/discover", meta=meta, headers={"mcp-protocol-version": "v999.0.0"}, id=301)
    assert reply.status == 400
    body = reply.json()
    assert (body["id"], body["error"]["code"]) == (301, -32022)
    assert body["error"]["data"]["requested"] == "v999.0.0"
    assert V in body["error"]["data"]["supported"]


async def test_protocol_version_header_disagreeing_with_meta_is_header_mismatch(conformance):
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "v999.0.0"}
    reply = await call("server/discover", meta=meta)
    assert (reply.status, reply.json()["error"]["code"]) == (400, -32020)


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "x/y"]
)
async def test_methods_of_the_handshake_era_are_404_method_not_found(conformance, method):
    reply = await call(method, id=500)
    assert reply.status == 404
    assert (reply.json()["id"], reply.json()["error"]["code"]) == (500, -32601)


@pytest.mark.parametrize(
    ("method", "params", "headers"),
    [
        ("tools/list", {}, {"mcp-method": "prompts/list"}),
        ("tools/list", {}, {"mcp-method": "TOOLS/LIST"}),
        ("tools/call", {"name": "test_simple_text"}, {"mcp-name": "wrong_tool_name"}),
        ("resources/read", {"uri": "test://static-text"}, {"mcp-name": "test://other"}),
    ],
)
async def test_headers_disagreeing_with_the_body_are_400_header_mismatch(conformance, method, params, headers):
    reply = await call(method, params, headers=headers)
    assert (reply.status, reply.json()["error"]["code"]) == (400, -32020)


async def test_missing_mcp_name_is_a_header_mismatch(conformance):
    body_params = {"name": "test_simple_text", "_meta": META}
    reply = await request(
        "POST",
        MCP,
        body=rpc("tools/call", body_params),
        headers={"mcp-protocol-version": V, "mcp-method": "tools/call"},
    )
    assert (reply.status, reply.json()["error"]["code"]) == (400, -32020)


async def test_header_names_are_case_insensitive_and_values_trimmed(conformance):
    reply = await call(
        "tools/call",
        {"name": "test_simple_text"},
        headers={"MCP-METHOD": "tools/call", "mcp-name": "  test_simple_text  "},
    )
    assert reply.status == 200
    assert reply.json()["result"]["content"][0]["text"] == "This is a simple text response for testing."


async def test_a_base64_encoded_name_is_decoded(conformance):
    reply = await call(
        "tools/call", {"name": "test_simple_text"}, headers={"mcp-name": "=?base64?dGVzdF9zaW1wbGVfdGV4dA==?="}
    )
    assert reply.status == 200


async def test_x_mcp_header_parameters_must_arrive_as_matching_headers(conformance):
    from tenants.models import Tenant
    from tenants.services import tool_create

    tenant = await Tenant.objects.aget(slug="conformance")
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    await sync_to_async(tool_create)(
        tenant=tenant,
        name="regional",
        description="Answers per region",
        input_schema=schema,
        backend="static",
        config={"content": [{"type": "text", "text": "ok"}], "isError": False},
    )
    params = {"name": "regional", "arguments": {"region": "Hello"}}
    ok = await call("tools/call", params, headers={"mcp-param-region": "=?base64?SGVsbG8=?="})
    assert ok.status == 200 and ok.json()["result"]["content"] == [{"type": "text", "text": "ok"}]
    for sent in ({}, {"mcp-param-region": "Goodbye"}, {"mcp-param-region": "=?base64?SGVsbG8?="}):
        refused = await call("tools/call", params, headers=sent)
        assert (refused.status, refused.json()["error"]["code"]) == (400, -32020)


async def test_lists_and_reads_carry_cache_hints_from_settings_and_the_tenant(conformance, settings):
    settings.MCP_PLATFORM = {"CACHE_TTL_MS": 5_000, "CACHE_SCOPE": "public"}
    listed = (await call("tools/list")).json()["result"]
    assert (listed["ttlMs"], listed["cacheScope"], listed["resultType"]) == (5_000, "public", "complete")
    assert [t["name"] for t in listed["tools"]] == sorted(t["name"] for t in listed["tools"])

    from tenants.models import Tenant
    from tenants.services import tenant_update

    tenant = await Tenant.objects.aget(slug="conformance")
    await sync_to_async(tenant_update)(tenant=tenant, data={"cache_ttl_ms": 0, "cache_scope": "private"})
    read = (await call("resources/read", {"uri": "test://static-text"})).json()["result"]
    assert (read["ttlMs"], read["cacheScope"]) == (0, "private")
    assert read["contents"][0]["uri"] == "test://static-text"
    called = (await call("tools/call", {"name": "test_simple_text"})).json()["result"]
    assert "ttlMs" not in called and called["resultType"] == "complete"


async def test_an_unknown_resource_is_invalid_params(conformance):
    reply = await call("resources/read", {"uri": "test://nothing"})
    assert reply.json()["error"]["code"] == -32602


async def test_prompts_get_answers_with_result_type(conformance):
    params = {"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}}
    result = (await call("prompts/get", params)).json()["result"]
    assert result["resultType"] == "complete" and result["messages"]


async def test_no_log_messages_without_a_log_level(conformance):
    reply = await call("tools/call", {"name": "test_tool_with_logging"})
    assert reply.headers["content-type"] == "application/json"
    assert [m.get("method") for m in reply.messages()] == [None]


async def test_log_level_opts_in_to_this_requests_log_messages_on_sse(conformance):
    meta = {**META, "io.modelcontextprotocol/logLevel": "info"}
    reply = await call("tools/call", {"name": "test_tool_with_logging"}, meta=meta)
    assert reply.headers["content-type"] == "text/event-stream"
    assert reply.headers["x-accel-buffering"] == "no"
    methods = [m.get("method") for m in reply.messages()]
    assert methods == ["notifications/message"] * 3 + [None]
    assert reply.messages()[-1]["result"]["resultType"] == "complete"
    assert all("id" not in event for event in reply.events())  # nothing to resume in this era


async def test_progress_travels_on_the_requests_own_stream(conformance):
    meta = {**META, "progressToken": "p1"}
    reply = await call("tools/call", {"name": "test_tool_with_progress"}, meta=meta)
    messages = reply.messages()
    assert [m["params"]["progress"] for m in messages[:-1]] == [0, 50, 100]
    assert messages[-1]["result"]["content"]


async def test_a_tool_needing_an_undeclared_capability_is_400_missing_capability(conformance):
    reply = await call("tools/call", {"name": "test_sampling", "arguments": {"prompt": "hi"}}, id=401)
    assert reply.status == 400
    body = reply.json()
    assert (body["id"], body["error"]["code"]) == (401, -32021)
    assert body["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


async def test_closing_the_response_cancels_the_work(conformance):
    from tenants.backends.python_grants import python_function_grant
    from tenants.models import Tenant
    from tenants.services import tool_create

    tenant = await Tenant.objects.aget(slug="conformance")
    await sync_to_async(python_function_grant)(tenant=tenant, function="tests.gateway.waits_forever")
    await sync_to_async(tool_create)(
        tenant=tenant,
        name="waits_forever",
        description="Never finishes",
        input_schema={"type": "object", "properties": {}},
        backend="python",
        config={"function": "tests.gateway.waits_forever"},
    )
    _cancelled.clear()
    params = {"name": "waits_forever", "_meta": {**META, "io.modelcontextprotocol/logLevel": "info"}}
    stream = OpenStream(MCP, rpc("tools/call", params), standard_headers("tools/call", params), timeout=5)
    status, _ = await stream.open()
    assert status == 200
    assert (await stream.next_message())["method"] == "notifications/message"
    await stream.close()
    await asyncio.wait_for(_cancelled.wait(), 5)


async def test_a_notification_is_accepted_with_202(conformance):
    reply = await request("POST", MCP, body=rpc("notifications/cancelled", {"requestId": 1}, id=None))
    assert (reply.status, reply.body) == (202, b"")


async def test_handshake_sessions_keep_working_next_to_stateless_requests(conformance):
    from tests.gateway.conftest import INIT_PARAMS

    init = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS))
    session_id = init.headers["mcp-session-id"]
    assert "resultType" not in init.json()["result"]
    ping = await request("POST", MCP, body=rpc("ping", id=2), headers={"mcp-session-id": session_id})
    assert ping.json()["result"] == {}
    missing = await request(
        "POST", MCP, body=rpc("resources/read", {"uri": "test://nothing"}, id=3), headers={"mcp-session-id": session_id}
    )
    assert missing.json()["error"]["code"] == -32002


async def test_a_question_to_the_client_never_becomes_a_request_on_the_stream(conformance):
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}, "progressToken": 1}
    reply = await call("tools/call", {"name": "test_streaming_elicitation"}, meta=meta)
    messages = reply.messages()
    assert [m.get("method") for m in messages] == ["notifications/progress", None]
    result = messages[-1]["result"]
    assert result["resultType"] == "input_required"
    assert [q["method"] for q in result["inputRequests"].values()] == ["elicitation/create"]


ALL_CAPABILITIES = {
    **META,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}, "roots": {}},
}


async def test_a_multi_round_tool_completes_over_three_independent_requests(conformance):
    call_params = {"name": "test_input_required_result_multi_round", "arguments": {}}
    first = (await call("tools/call", call_params, meta=ALL_CAPABILITIES, id=1)).json()["result"]
    assert (first["resultType"], list(first["inputRequests"])) == ("input_required", ["step1"])
    answer = {"step1": {"action": "accept", "content": {"name": "Ada"}}}
    retry = {**call_params, "inputResponses": answer, "requestState": first["requestState"]}
    second = (await call("tools/call", retry, meta=ALL_CAPABILITIES, id=2)).json()["result"]
    assert list(second["inputRequests"]) == ["step2"]
    answer = {"step2": {"action": "accept", "content": {"color": "blue"}}}
    retry = {**call_params, "inputResponses": answer, "requestState": second["requestState"]}
    third = (await call("tools/call", retry, meta=ALL_CAPABILITIES, id=3)).json()["result"]
    assert third["resultType"] == "complete"
    assert third["content"] == [{"type": "text", "text": "Multi-round complete for Ada who likes blue"}]


async def test_a_tampered_request_state_is_invalid_params_with_the_request_id(conformance):
    call_params = {"name": "test_input_required_result_tampered_state", "arguments": {}}
    first = (await call("tools/call", call_params, meta=ALL_CAPABILITIES, id=1)).json()["result"]
    retry = {
        **call_params,
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
        "requestState": first["requestState"] + "-TAMPERED",
    }
    reply = (await call("tools/call", retry, meta=ALL_CAPABILITIES, id=9)).json()
    assert reply["id"] == 9 and reply["error"]["code"] == -32602
    assert "integrity" in reply["error"]["message"]


async def test_only_declared_capabilities_are_asked_for(conformance):
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}
    result = (await call("tools/call", {"name": "test_input_required_result_capabilities"}, meta=meta)).json()
    assert {q["method"] for q in result["result"]["inputRequests"].values()} == {"sampling/createMessage"}


CONTEXT_ANSWER = {"user_context": {"action": "accept", "content": {"context": "test context"}}}


async def test_a_prompt_that_asks_answers_input_required_and_the_retry_renders_it(conformance):
    get = {"name": "test_input_required_result_prompt"}
    first = (await call("prompts/get", get, meta=ALL_CAPABILITIES, id=1)).json()["result"]
    assert first["resultType"] == "input_required"
    assert first["inputRequests"]["user_context"]["params"]["message"] == "What context should the prompt use?"
    retry = {**get, "inputResponses": CONTEXT_ANSWER, "requestState": first["requestState"]}
    second = (await call("prompts/get", retry, meta=ALL_CAPABILITIES, id=2)).json()["result"]
    assert second["resultType"] == "complete"
    assert second["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Prompt with context: test context"}}
    ]
    assert second["description"] == "MRTR: prompt that requires elicitation input"


async def test_a_prompt_asks_nothing_of_a_client_that_cannot_answer(conformance):
    reply = await call("prompts/get", {"name": "test_input_required_result_prompt"})
    assert reply.status == 400
    assert reply.json()["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}


# ---- requestState belongs to the bearer token's user and client --------------------------------------------

ACME = "/t/acme/mcp"


@pytest.fixture
def acme_with_prompt(transactional_db: None) -> Any:
    """A tenant that requires authorization, two members, two clients, and a prompt that asks for context."""
    from tenants.backends.python_grants import python_function_grant
    from tenants.services import prompt_create
    from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, UserFactory

    tenant = TenantFactory(slug="acme", name="Acme", requires_authorization=True)
    python_function_grant(tenant=tenant, function="tests.gateway.input_required_prompt")
    prompt_create(
        tenant=tenant, name="context", backend="python", config={"function": "tests.gateway.input_required_prompt"}
    )
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    for user in (alice, bob):
        MembershipFactory(user=user, tenant=tenant)
    return {"alice": alice, "bob": bob, "claude": OAuthClientFactory(name="Claude"), "cursor": OAuthClientFactory()}


async def bearer(user: Any, application: Any) -> dict[str, str]:
    from tests.factories import access_token_create

    token = await sync_to_async(access_token_create)(
        user=user, application=application, resource=["http://127.0.0.1:8000/t/acme/mcp"]
    )
    return {"authorization": f"Bearer {token}"}


async def test_request_state_sealed_for_one_user_and_client_is_refused_to_any_other(acme_with_prompt):
    people = acme_with_prompt
    get = {"name": "context"}
    alice = await bearer(people["alice"], people["claude"])
    first = await call("prompts/get", get, meta=ALL_CAPABILITIES, headers=alice, path=ACME, id=1)
    state = first.json()["result"]["requestState"]
    retry = {**get, "inputResponses": CONTEXT_ANSWER, "requestState": state}

    for other in (await bearer(people["bob"], people["claude"]), await bearer(people["alice"], people["cursor"])):
        refused = (await call("prompts/get", retry, meta=ALL_CAPABILITIES, headers=other, path=ACME, id=2)).json()
        assert refused["id"] == 2 and refused["error"]["code"] == -32602
        assert "another principal" in refused["error"]["message"]

    # Another token of the same user through the same client (a refresh, say) carries the conversation on.
    renewed = await bearer(people["alice"], people["claude"])
    done = (await call("prompts/get", retry, meta=ALL_CAPABILITIES, headers=renewed, path=ACME, id=3)).json()
    assert done["result"]["messages"][0]["content"]["text"] == "Prompt with context: test context"


async def test_request_state_of_a_public_tenant_is_refused_by_an_authorized_one(conformance, acme_with_prompt):
    people = acme_with_prompt
    public = (
        await call("tools/call", {"name": "test_input_required_result_elicitation"}, meta=ALL_CAPABILITIES)
    ).json()
    retry = {
        "name": "context",
        "inputResponses": CONTEXT_ANSWER,
        "requestState": public["result"]["requestState"],
    }
    alice = await bearer(people["alice"], people["claude"])
    refused = (await call("prompts/get", retry, meta=ALL_CAPABILITIES, headers=alice, path=ACME)).json()
    assert refused["error"]["code"] == -32602 and "another server" in refused["error"]["message"]


async def open_listen(notifications: dict[str, Any], *, id: int = 11) -> OpenStream:
    """A subscriptions/listen stream through the ASGI stack, its response started."""
    params = {"notifications": notifications, "_meta": META}
    stream = OpenStream(
        MCP, rpc("subscriptions/listen", params, id=id), standard_headers("subscriptions/listen", params)
    )
    status, headers = await stream.open()
    assert (status, headers["content-type"]) == (200, "text/event-stream")
    return stream


async def test_listen_acknowledges_then_delivers_only_requested_changes_tagged_with_its_id(conformance):
    stream = await open_listen({"toolsListChanged": True, "promptsListChanged": False}, id=11)
    ack = await stream.next_message()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"toolsListChanged": True}
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 11

    prompts = await call("tools/call", {"name": "test_trigger_prompt_change"}, id=12)
    assert prompts.json()["result"]["content"][0]["text"] == "Mutation triggered"
    await call("tools/call", {"name": "test_trigger_tool_change"}, id=13)
    changed = await stream.next_message()
    # The prompts change was not asked for: the first notification after the acknowledgement is the tools one.
    assert changed == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 11}},
    }
    await stream.close()


async def test_a_listen_with_a_bad_envelope_is_a_json_error_with_its_id(conformance):
    reply = await call("subscriptions/listen", {"notifications": {"toolsListChanged": "yes"}}, id=21)
    assert reply.json()["id"] == 21 and reply.json()["error"]["code"] == -32602


async def test_discover_promises_what_listen_delivers(conformance):
    capabilities = (await call("server/discover")).json()["result"]["capabilities"]
    assert capabilities["tools"] == {"listChanged": True} and capabilities["prompts"] == {"listChanged": True}
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}


def test_a_machine_client_acts_for_itself_in_tasks_and_request_states():
    from mcp_platform.oauth.resource import PRINCIPAL_SCOPE_KEY, Principal, principal_label

    machine = Principal(user_id=None, client_id="nightly", scopes=frozenset({"mcp:tools"}), token_id=1)
    person = Principal(user_id=7, client_id="nightly", scopes=frozenset({"mcp:tools"}), token_id=2)
    assert principal_label({PRINCIPAL_SCOPE_KEY: machine}) == "client:nightly"
    assert principal_label({PRINCIPAL_SCOPE_KEY: person}) == "user:7 client:nightly"
    assert principal_label({}) == "anonymous"
