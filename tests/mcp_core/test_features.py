"""Server features through ``dispatch``, against an in-memory catalog: no database, no I/O."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_core.dispatch import dispatch
from mcp_core.env import Env, ServerIdentity
from mcp_core.errors import InvalidParams, MethodNotFound, PromptError, ResourceNotFound, ToolError
from mcp_core.features.lifecycle import initialize_result, parse_initialize
from tests.mcp_core.memory_catalog import MemoryCatalog, RecordingOutbound

pytestmark = pytest.mark.anyio


class Hooks:
    def __init__(self) -> None:
        self.level: str | None = None
        self.subscriptions: set[str] = set()

    async def set_log_level(self, level: str) -> None:
        self.level = level

    async def subscribe(self, uri: str) -> None:
        self.subscriptions.add(uri)

    async def unsubscribe(self, uri: str) -> None:
        self.subscriptions.discard(uri)


def make_env(catalog: MemoryCatalog, version: str = "2025-11-25", **kwargs: Any) -> Env:
    kwargs.setdefault("outbound", RecordingOutbound())
    kwargs.setdefault("client_capabilities", {"sampling": {}, "elicitation": {}})
    return Env(version=version, catalog=catalog, server=ServerIdentity("srv", "1.0"), session=Hooks(), **kwargs)


async def echo(ctx: Any, text: str = "") -> str:
    return text


@pytest.fixture
def catalog() -> MemoryCatalog:
    catalog = MemoryCatalog()
    catalog.add_tool(
        {
            "name": "echo",
            "description": "Echo",
            "title": "Echo",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
        echo,
    )
    return catalog


def test_initialize_parses_and_negotiates() -> None:
    version, caps, info = parse_initialize(
        {"protocolVersion": "2024-11-05", "capabilities": {"roots": {}}, "clientInfo": {"name": "c"}}
    )
    assert (version, caps, info) == ("2024-11-05", {"roots": {}}, {"name": "c"})
    result = initialize_result(ServerIdentity("srv", "1", instructions="Be nice"), version)
    assert "completions" not in result["capabilities"]
    assert result["instructions"] == "Be nice"


def test_initialize_without_version_is_invalid_params() -> None:
    with pytest.raises(InvalidParams):
        parse_initialize({"capabilities": {}})


async def test_tools_list_paginates_with_opaque_cursors(catalog: MemoryCatalog) -> None:
    for i in range(7):
        catalog.add_tool({"name": f"t{i}", "description": "", "inputSchema": {"type": "object"}}, echo)
    env = make_env(catalog, page_size=3)
    seen: list[str] = []
    params: dict[str, Any] = {}
    for _ in range(10):
        result = await dispatch("tools/list", params, env)
        seen += [t["name"] for t in result["tools"]]
        if "nextCursor" not in result:
            break
        params = {"cursor": result["nextCursor"]}
    assert seen == sorted(["echo", *(f"t{i}" for i in range(7))])


async def test_invalid_cursor_is_invalid_params(catalog: MemoryCatalog) -> None:
    with pytest.raises(InvalidParams):
        await dispatch("tools/list", {"cursor": "garbage!"}, make_env(catalog))


async def test_tool_fields_newer_than_the_session_are_omitted(catalog: MemoryCatalog) -> None:
    result = await dispatch("tools/list", {}, make_env(catalog, version="2025-03-26"))
    assert "title" not in result["tools"][0]
    result = await dispatch("tools/list", {}, make_env(catalog, version="2025-06-18"))
    assert result["tools"][0]["title"] == "Echo"


async def test_call_tool_returns_text(catalog: MemoryCatalog) -> None:
    result = await dispatch("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, make_env(catalog))
    assert result == {"content": [{"type": "text", "text": "hi"}]}


async def test_unknown_tool_is_invalid_params(catalog: MemoryCatalog) -> None:
    with pytest.raises(InvalidParams):
        await dispatch("tools/call", {"name": "nope"}, make_env(catalog))


async def test_arguments_failing_the_schema_are_an_error_result(catalog: MemoryCatalog) -> None:
    result = await dispatch("tools/call", {"name": "echo", "arguments": {"text": 3}}, make_env(catalog))
    assert result["isError"] is True
    assert "text" in result["content"][0]["text"]


async def test_absent_arguments_are_validated_as_an_empty_object(catalog: MemoryCatalog) -> None:
    result = await dispatch("tools/call", {"name": "echo"}, make_env(catalog))
    assert result["isError"] is True
    assert "required" in result["content"][0]["text"]


async def test_tool_error_and_crash_become_error_results(catalog: MemoryCatalog) -> None:
    async def fails(ctx: Any) -> None:
        raise ToolError("nope, not today")

    async def crashes(ctx: Any) -> None:
        raise RuntimeError("secret internals")

    catalog.add_tool({"name": "fails", "description": "", "inputSchema": {"type": "object"}}, fails)
    catalog.add_tool({"name": "crashes", "description": "", "inputSchema": {"type": "object"}}, crashes)
    failed = await dispatch("tools/call", {"name": "fails"}, make_env(catalog))
    assert failed == {"content": [{"type": "text", "text": "nope, not today"}], "isError": True}
    crashed = await dispatch("tools/call", {"name": "crashes"}, make_env(catalog))
    assert crashed["isError"] is True
    assert "secret internals" not in crashed["content"][0]["text"]


async def test_output_schema_is_enforced_and_structured_content_returned(catalog: MemoryCatalog) -> None:
    async def add(ctx: Any, a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    async def wrong(ctx: Any) -> dict[str, str]:
        return {"sum": "three"}

    schema = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}
    catalog.add_tool({"name": "add", "description": "", "inputSchema": {"type": "object"}, "outputSchema": schema}, add)
    catalog.add_tool(
        {"name": "wrong", "description": "", "inputSchema": {"type": "object"}, "outputSchema": schema}, wrong
    )
    result = await dispatch("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, make_env(catalog))
    assert result["structuredContent"] == {"sum": 3}
    assert result["content"][0]["text"] == '{"sum":3}'
    bad = await dispatch("tools/call", {"name": "wrong"}, make_env(catalog))
    assert bad["isError"] is True


async def test_progress_and_logs_reach_the_outbound_in_order(catalog: MemoryCatalog) -> None:
    async def work(ctx: Any) -> str:
        await ctx.report_progress(1, 2)
        await ctx.log("debug", "hidden")
        await ctx.log("warning", "shown", logger="w")
        await ctx.report_progress(2, 2, "done")
        return "ok"

    catalog.add_tool({"name": "work", "description": "", "inputSchema": {"type": "object"}}, work)
    outbound = RecordingOutbound()
    env = make_env(catalog, outbound=outbound, log_level="info", meta={"progressToken": "tok"})
    await dispatch("tools/call", {"name": "work"}, env)
    assert outbound.sent == [
        ("notifications/progress", {"progressToken": "tok", "progress": 1, "total": 2}),
        ("notifications/message", {"level": "warning", "data": "shown", "logger": "w"}),
        ("notifications/progress", {"progressToken": "tok", "progress": 2, "total": 2, "message": "done"}),
    ]


async def test_progress_without_a_token_sends_nothing(catalog: MemoryCatalog) -> None:
    async def work(ctx: Any) -> str:
        await ctx.report_progress(1)
        return "ok"

    catalog.add_tool({"name": "work", "description": "", "inputSchema": {"type": "object"}}, work)
    outbound = RecordingOutbound()
    await dispatch("tools/call", {"name": "work"}, make_env(catalog, outbound=outbound))
    assert outbound.sent == []


async def test_elicitation_needs_the_client_capability(catalog: MemoryCatalog) -> None:
    async def ask(ctx: Any) -> str:
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        return answer["action"]

    catalog.add_tool({"name": "ask", "description": "", "inputSchema": {"type": "object"}}, ask)
    outbound = RecordingOutbound({"elicitation/create": {"action": "accept", "content": {"n": "Ada"}}})
    ok = await dispatch("tools/call", {"name": "ask"}, make_env(catalog, outbound=outbound))
    assert ok == {"content": [{"type": "text", "text": "accept"}]}
    refused = await dispatch("tools/call", {"name": "ask"}, make_env(catalog, client_capabilities={}))
    assert refused["isError"] is True
    assert "elicitation" in refused["content"][0]["text"]


async def test_url_elicitation_needs_the_url_sub_capability(catalog: MemoryCatalog) -> None:
    async def visit(ctx: Any) -> str:
        answer = await ctx.elicit_url("Sign in", "https://example.com/auth", "e1")
        return answer["action"]

    catalog.add_tool({"name": "visit", "description": "", "inputSchema": {"type": "object"}}, visit)
    outbound = RecordingOutbound({"elicitation/create": {"action": "accept"}})
    caps = {"elicitation": {"form": {}, "url": {}}}
    ok = await dispatch("tools/call", {"name": "visit"}, make_env(catalog, outbound=outbound, client_capabilities=caps))
    assert ok["content"][0]["text"] == "accept"
    assert outbound.sent[0][1]["mode"] == "url"
    refused = await dispatch("tools/call", {"name": "visit"}, make_env(catalog))
    assert refused["isError"] is True


async def test_resources_read_and_not_found(catalog: MemoryCatalog) -> None:
    catalog.resources["test://a"] = ({"uri": "test://a", "name": "a"}, [{"uri": "test://a", "text": "A"}])
    catalog.templates["t"] = {"uriTemplate": "test://items/{id}", "name": "t"}
    env = make_env(catalog)
    assert (await dispatch("resources/read", {"uri": "test://a"}, env))["contents"][0]["text"] == "A"
    templated = await dispatch("resources/read", {"uri": "test://items/42"}, env)
    assert "42" in templated["contents"][0]["text"]
    with pytest.raises(ResourceNotFound):
        await dispatch("resources/read", {"uri": "test://missing"}, env)
    listed = await dispatch("resources/templates/list", {}, env)
    assert listed["resourceTemplates"][0]["uriTemplate"] == "test://items/{id}"


async def test_subscribe_and_log_level_go_to_the_session(catalog: MemoryCatalog) -> None:
    env = make_env(catalog)
    assert await dispatch("resources/subscribe", {"uri": "test://a"}, env) == {}
    assert await dispatch("logging/setLevel", {"level": "error"}, env) == {}
    assert env.session.subscriptions == {"test://a"}  # type: ignore[union-attr]
    assert env.session.level == "error"  # type: ignore[union-attr]
    with pytest.raises(InvalidParams):
        await dispatch("logging/setLevel", {"level": "loud"}, env)


async def test_prompts_get_checks_required_arguments(catalog: MemoryCatalog) -> None:
    wire = {"name": "greet", "arguments": [{"name": "who", "required": True}], "description": "Greeting"}
    catalog.prompts["greet"] = (
        wire,
        [{"role": "user", "content": {"type": "text", "text": "Hello {{who}}"}}],
    )
    env = make_env(catalog)
    result = await dispatch("prompts/get", {"name": "greet", "arguments": {"who": "Ada"}}, env)
    assert result["messages"][0]["content"]["text"] == "Hello Ada"
    assert result["description"] == "Greeting"
    with pytest.raises(InvalidParams):
        await dispatch("prompts/get", {"name": "greet"}, env)
    with pytest.raises(InvalidParams):
        await dispatch("prompts/get", {"name": "nope"}, env)


async def context_prompt(ctx: Any, topic: str = "") -> str:
    answer = await ctx.elicit("Which context?", {"type": "object", "properties": {"context": {"type": "string"}}})
    return f"{topic} in {answer['content']['context']}"


async def test_a_prompt_function_asks_a_handshake_client_over_the_wire(catalog: MemoryCatalog) -> None:
    catalog.add_prompt_function({"name": "ctx", "description": "Context"}, context_prompt)
    outbound = RecordingOutbound({"elicitation/create": {"action": "accept", "content": {"context": "prod"}}})
    result = await dispatch(
        "prompts/get", {"name": "ctx", "arguments": {"topic": "db"}}, make_env(catalog, outbound=outbound)
    )
    assert [method for method, _ in outbound.requests] == ["elicitation/create"]
    assert result == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "db in prod"}}],
        "description": "Context",
    }


async def refuses(ctx: Any) -> str:
    raise PromptError("No context, no prompt.")


async def breaks(ctx: Any) -> str:
    raise KeyError("secret detail")


async def malformed(ctx: Any) -> list[str]:
    return ["not a message"]


@pytest.mark.parametrize(
    ("fn", "capabilities", "message"),
    [
        (refuses, None, "No context, no prompt."),
        (context_prompt, {}, "Prompt p needed something from the client that failed: the client did not declare"),
        (breaks, None, "Prompt p failed with an internal error"),
        (malformed, None, "Prompt p failed with an internal error"),
    ],
)
async def test_a_prompt_that_cannot_render_is_an_internal_error_with_a_reason(
    catalog: MemoryCatalog, fn: Any, capabilities: dict[str, Any] | None, message: str
) -> None:
    catalog.add_prompt_function({"name": "p"}, fn)
    env = make_env(catalog) if capabilities is None else make_env(catalog, client_capabilities=capabilities)
    with pytest.raises(PromptError) as caught:
        await dispatch("prompts/get", {"name": "p"}, env)
    assert caught.value.code == -32603
    assert caught.value.message.startswith(message)
    assert "secret detail" not in caught.value.message


async def test_completion_filters_and_caps_values(catalog: MemoryCatalog) -> None:
    catalog.prompts["greet"] = ({"name": "greet"}, [])
    catalog.completions["greet:lang"] = [f"py{i}" for i in range(150)] + ["rust"]
    env = make_env(catalog)
    params = {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "lang", "value": "py"}}
    result = await dispatch("completion/complete", params, env)
    assert len(result["completion"]["values"]) == 100
    assert result["completion"]["total"] == 150
    assert result["completion"]["hasMore"] is True
    with pytest.raises(InvalidParams):
        await dispatch("completion/complete", {"ref": {"type": "ref/other"}, "argument": {"name": "x"}}, env)


async def test_unknown_method_is_method_not_found(catalog: MemoryCatalog) -> None:
    with pytest.raises(MethodNotFound):
        await dispatch("sampling/createMessage", {}, make_env(catalog))


async def test_ping_is_an_empty_object(catalog: MemoryCatalog) -> None:
    assert await dispatch("ping", None, make_env(catalog)) == {}
