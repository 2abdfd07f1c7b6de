"""The official MCP Python SDK in its default mode against a live server: it probes ``server/discover`` at
2026-07-28 and, finding a modern server, stays stateless for every request (no ``initialize``, no session)."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client, ClientRequestContext
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

REQUEST_TIMEOUT = 30.0
TEST_DEADLINE = 60.0


def modern_client(server: Any, **options: Any) -> Client:
    """The SDK client as users get it: ``Client(url)`` with the default (auto) era negotiation."""
    return Client(server, cache=None, read_timeout_seconds=REQUEST_TIMEOUT, **options)


def only_text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


async def test_default_client_negotiates_2026_07_28_through_discover(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with modern_client(conformance_url) as client:
            assert client.session.discover_result is not None, "the discover probe must have been adopted"
            assert client.session.initialize_result is None
            assert client.protocol_version == "2026-07-28"
            assert "2025-11-25" in client.session.discover_result.supported_versions
            assert client.server_info is not None and client.server_info.name == "mcp-platform/conformance"


async def test_tools_are_listed_and_called_statelessly(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with modern_client(conformance_url) as client:
            listed = await client.list_tools()
            names = [tool.name for tool in listed.tools]
            assert names == sorted(names)
            assert {"test_simple_text", "test_x_mcp_header"} <= set(names)
            simple = await client.call_tool("test_simple_text", {})
            assert only_text(simple) == "This is a simple text response for testing."
            # The SDK mirrors the x-mcp-header argument into Mcp-Param-Region; the server checks it.
            regional = await client.call_tool("test_x_mcp_header", {"region": "Zürich west"})
            assert only_text(regional) == "ok"


async def test_resources_are_read_and_unknown_ones_are_invalid_params(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with modern_client(conformance_url) as client:
            read = await client.read_resource("test://static-text")
            content = read.contents[0]
            assert isinstance(content, types.TextResourceContents)
            assert content.text == "This is the content of the static text resource."
            templated = await client.read_resource("test://template/42/data")
            assert '"id":"42"' in templated.contents[0].text  # type: ignore[union-attr]
            with pytest.raises(MCPError) as caught:
                await client.read_resource("test://no-such-resource")
            assert caught.value.code == -32602


async def test_prompts_are_rendered(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with modern_client(conformance_url) as client:
            prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "alpha", "arg2": "beta"})
            assert prompt.messages
            first = prompt.messages[0].content
            assert isinstance(first, types.TextContent)
            assert "alpha" in first.text and "beta" in first.text


async def test_progress_arrives_on_the_calls_own_stream(conformance_url: str) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    with anyio.fail_after(TEST_DEADLINE):
        async with modern_client(conformance_url) as client:
            result = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
    assert only_text(result) == "Progress reported"
    assert seen == [0, 50, 100]


async def test_an_elicitation_travels_as_input_required_and_the_retry_completes_the_call(conformance_url: str) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    with anyio.fail_after(TEST_DEADLINE):
        async with modern_client(conformance_url, elicitation_callback=elicit) as client:
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("test_input_required_result_elicitation", {})
    assert only_text(result) == "Hello, Ada!"
    (params,) = asked
    assert params.message == "What is your name?"


async def test_two_rounds_of_questions_are_answered_through_the_sealed_state(conformance_url: str) -> None:
    answers = iter([{"name": "Ada"}, {"color": "blue"}])
    messages: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        messages.append(params.message)
        return types.ElicitResult(action="accept", content=next(answers))

    with anyio.fail_after(TEST_DEADLINE):
        async with modern_client(conformance_url, elicitation_callback=elicit) as client:
            result = await client.call_tool("test_input_required_result_multi_round", {})
    assert only_text(result) == "Multi-round complete for Ada who likes blue"
    assert messages == ["Step 1: What is your name?", "Step 2: What is your favorite color?"]


async def test_a_python_prompt_asks_through_input_required_and_renders_with_the_answer(conformance_url: str) -> None:
    asked: list[tuple[Any, str]] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append((context.request_id, params.message))
        return types.ElicitResult(action="accept", content={"context": "a code review"})

    with anyio.fail_after(TEST_DEADLINE):
        async with modern_client(conformance_url, elicitation_callback=elicit) as client:
            assert client.protocol_version == "2026-07-28"
            prompt = await client.get_prompt("test_input_required_result_prompt")
    (message,) = prompt.messages
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Prompt with context: a code review"
    # The question arrived inside an input_required result, under the prompt's own key.
    assert asked == [("user_context", "What context should the prompt use?")]
