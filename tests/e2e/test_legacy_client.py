"""The official MCP Python SDK, forced into the handshake era, against a live server.

``Client(url, mode="legacy")`` sends ``initialize`` (proposing 2025-11-25) instead of probing
``server/discover``. The 2024-11-05 HTTP+SSE transport is covered with the SDK's ``sse_client`` and by hand.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp.client import Client, ClientRequestContext
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError

from tests.e2e.live import PAGED_LANGUAGES, PAGED_PROMPT, PAGED_TOOL_COUNT, LiveServer
from tests.e2e.raw_http import CLIENT_INFO, request_message, sse_events

pytestmark = [
    pytest.mark.anyio,
    # ping, logging/setLevel and resources/subscribe are deprecated for 2026-07-28, not for this era.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

REQUEST_TIMEOUT = 30.0
TEST_DEADLINE = 60.0
MAX_PAGES = 20
ROUND_TRIP_BUDGET = 2.0
SESSIONS_FOR_TIMING = 3
ROUND_TRIPS_PER_SESSION = 3

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

CONFORMANCE_TOOLS = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
}
CONFORMANCE_PROMPTS = {
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
    "test_input_required_result_prompt",
}


def legacy_client(server: Any, **options: Any) -> Client:
    """The SDK client in the handshake era: ``mode="legacy"`` forces ``initialize``, no discover probe."""
    return Client(server, mode="legacy", cache=None, read_timeout_seconds=REQUEST_TIMEOUT, **options)


def only_text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


async def tool_pages(client: Client) -> list[list[str]]:
    """The tool names of every page of ``tools/list``, following ``nextCursor`` to the end."""
    pages: list[list[str]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        pages.append([tool.name for tool in page.tools])
        cursor = page.next_cursor
        if cursor is None:
            return pages
    pytest.fail(f"tools/list still had a nextCursor after {MAX_PAGES} pages")


# ---- lifecycle ---------------------------------------------------------------------------------------


async def test_initialize_negotiates_2025_11_25_and_declares_the_fixture_capabilities(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            assert client.session.initialize_result is not None, "legacy mode must run the initialize handshake"
            assert client.session.discover_result is None
            assert client.protocol_version == "2025-11-25"
            assert client.server_info is not None
            assert client.server_info.name
            assert client.server_info.version
            capabilities = client.server_capabilities
            assert capabilities.tools is not None
            assert capabilities.resources is not None
            assert capabilities.resources.subscribe is True
            assert capabilities.prompts is not None
            assert capabilities.logging is not None
            assert capabilities.completions is not None


async def test_ping_answers_an_empty_result(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            result = await client.send_ping()
            assert isinstance(result, types.EmptyResult)


async def test_set_logging_level_succeeds(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            result = await client.set_logging_level("warning")
            assert isinstance(result, types.EmptyResult)


# ---- tools -------------------------------------------------------------------------------------------


async def test_tool_pages_list_every_conformance_tool_exactly_once(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            names = [name for page in await tool_pages(client) for name in page]
    assert len(names) == len(set(names)), f"a tool was listed twice: {names}"
    assert set(names) >= CONFORMANCE_TOOLS, f"missing: {CONFORMANCE_TOOLS - set(names)}"


async def test_120_tools_span_three_pages_without_gaps_or_duplicates(paged_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(paged_url) as client:
            pages = await tool_pages(client)
    names = [name for page in pages for name in page]
    assert [len(page) for page in pages] == [50, 50, 20]
    assert len(names) == len(set(names)), "a tool was listed on two pages"
    assert set(names) == {f"paged_tool_{index:03d}" for index in range(PAGED_TOOL_COUNT)}


async def test_invalid_cursor_is_rejected_with_invalid_params(paged_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(paged_url) as client:
            with pytest.raises(MCPError) as raised:
                await client.list_tools(cursor="this-is-not-a-cursor")
    assert raised.value.code == INVALID_PARAMS


async def test_simple_text_tool_returns_its_text(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            result = await client.call_tool("test_simple_text", {})
    assert result.is_error is not True
    assert only_text(result) == "This is a simple text response for testing."


async def test_image_tool_returns_a_png(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            result = await client.call_tool("test_image_content", {})
    (image,) = result.content
    assert isinstance(image, types.ImageContent)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(PNG_SIGNATURE)


async def test_audio_tool_returns_wav_audio(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            result = await client.call_tool("test_audio_content", {})
    (audio,) = result.content
    assert isinstance(audio, types.AudioContent)
    assert audio.mime_type == "audio/wav"
    wav = base64.b64decode(audio.data)
    assert wav[:4] == b"RIFF"
    assert wav[8:12] == b"WAVE"


async def test_embedded_resource_tool_embeds_the_text_resource(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            result = await client.call_tool("test_embedded_resource", {})
    (embedded,) = result.content
    assert isinstance(embedded, types.EmbeddedResource)
    assert isinstance(embedded.resource, types.TextResourceContents)
    assert str(embedded.resource.uri) == "test://embedded-resource"
    assert embedded.resource.mime_type == "text/plain"
    assert embedded.resource.text == "This is an embedded resource content."


async def test_multiple_content_types_come_back_in_order(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            result = await client.call_tool("test_multiple_content_types", {})
    text, image, embedded = result.content
    assert isinstance(text, types.TextContent)
    assert text.text == "Multiple content types test:"
    assert isinstance(image, types.ImageContent)
    assert base64.b64decode(image.data).startswith(PNG_SIGNATURE)
    assert isinstance(embedded, types.EmbeddedResource)
    assert isinstance(embedded.resource, types.TextResourceContents)
    assert str(embedded.resource.uri) == "test://mixed-content-resource"
    assert json.loads(embedded.resource.text) == {"test": "data", "value": 123}


async def test_failing_tool_is_an_error_result_not_a_protocol_error(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            result = await client.call_tool("test_error_handling", {})
    assert result.is_error is True
    assert "This tool intentionally returns an error for testing" in only_text(result)


async def test_unknown_tool_is_an_invalid_params_error(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("no_such_tool", {})
    assert raised.value.code == INVALID_PARAMS


async def test_progress_callback_sees_three_increasing_notifications(conformance_url: str) -> None:
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            result = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
    assert result.is_error is not True
    assert seen == [(0, 100), (50, 100), (100, 100)]


async def test_logging_callback_receives_the_tool_log_messages_in_order(conformance_url: str) -> None:
    received: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params)

    expected = ["Tool execution started", "Tool processing data", "Tool execution completed"]
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url, logging_callback=on_log) as client:
            await client.set_logging_level("debug")
            result = await client.call_tool("test_tool_with_logging", {})
    assert only_text(result) == "Tool with logging executed successfully"
    from_tool = [params for params in received if params.data in expected]
    assert [params.data for params in from_tool] == expected
    assert {params.level for params in from_tool} == {"info"}


async def test_log_messages_below_the_set_level_are_not_sent(conformance_url: str) -> None:
    received: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params)

    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url, logging_callback=on_log) as client:
            await client.set_logging_level("error")
            received.clear()
            result = await client.call_tool("test_tool_with_logging", {})
    # Related notifications travel before the response on its stream, so none can still be in flight.
    assert only_text(result) == "Tool with logging executed successfully"
    assert [params for params in received if params.level == "info"] == []


async def test_sampling_round_trip_returns_the_sampled_text(conformance_url: str) -> None:
    requests: list[types.CreateMessageRequestParams] = []

    async def sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        requests.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Paris is the capital of France."),
            model="e2e-model",
            stop_reason="endTurn",
        )

    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url, sampling_callback=sample) as client:
            result = await client.call_tool("test_sampling", {"prompt": "What is the capital of France?"})
    assert only_text(result) == "LLM response: Paris is the capital of France."
    (params,) = requests
    (message,) = params.messages
    assert message.role == "user"
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "What is the capital of France?"
    assert params.max_tokens == 100


async def test_sampling_answers_on_a_busy_session_reach_the_tool_without_stalling(conformance_url: str) -> None:
    """The client's answer must be routed to the waiting tool at once, whatever ran on the session before."""

    async def sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="quick"), model="e2e-model"
        )

    durations: list[float] = []
    texts: list[str] = []
    with anyio.fail_after(TEST_DEADLINE):
        for _ in range(SESSIONS_FOR_TIMING):
            async with legacy_client(conformance_url, sampling_callback=sample) as client:
                await client.call_tool("test_simple_text", {})
                await client.send_ping()
                for _ in range(ROUND_TRIPS_PER_SESSION):
                    started = time.monotonic()
                    result = await client.call_tool("test_sampling", {"prompt": "Are you quick?"})
                    durations.append(time.monotonic() - started)
                    texts.append(only_text(result))
            if max(durations) >= ROUND_TRIP_BUDGET:
                break
    assert set(texts) == {"LLM response: quick"}
    # A round trip takes tens of milliseconds; the budget only catches answers parked for seconds.
    assert max(durations) < ROUND_TRIP_BUDGET, f"sampling round trips took {[round(d, 2) for d in durations]}s"


async def test_elicitation_accepted_with_content_reaches_the_tool(conformance_url: str) -> None:
    requests: list[types.ElicitRequestParams] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        requests.append(params)
        return types.ElicitResult(action="accept", content={"response": "blue"})

    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url, elicitation_callback=elicit) as client:
            result = await client.call_tool("test_elicitation", {"message": "Favourite colour?"})
    assert only_text(result) == 'User response: action=accept, content={"response":"blue"}'
    (params,) = requests
    assert isinstance(params, types.ElicitRequestFormParams)
    assert params.message == "Favourite colour?"
    assert params.requested_schema["properties"]["response"]["type"] == "string"
    assert params.requested_schema["required"] == ["response"]


async def test_declined_elicitation_reaches_the_tool_without_content(conformance_url: str) -> None:
    async def decline(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url, elicitation_callback=decline) as client:
            result = await client.call_tool("test_elicitation", {"message": "Favourite colour?"})
    assert only_text(result) == "User response: action=decline, content={}"


async def test_elicitation_schema_carries_the_sep1034_defaults(conformance_url: str) -> None:
    async def accept_defaults(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        properties = params.requested_schema["properties"]
        return types.ElicitResult(
            action="accept",
            content={name: prop["default"] for name, prop in properties.items() if "default" in prop},
        )

    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url, elicitation_callback=accept_defaults) as client:
            result = await client.call_tool("test_elicitation_sep1034_defaults", {})
    text = only_text(result)
    prefix = "Elicitation completed: action=accept, content="
    assert text.startswith(prefix), text
    assert json.loads(text.removeprefix(prefix)) == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }


# ---- resources ---------------------------------------------------------------------------------------


async def test_resources_list_the_static_and_watched_resources(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            listed = await client.list_resources()
    uris = {str(resource.uri) for resource in listed.resources}
    assert uris >= {"test://static-text", "test://static-binary", "test://watched-resource"}


async def test_static_text_resource_reads_as_text(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            read = await client.read_resource("test://static-text")
    (contents,) = read.contents
    assert isinstance(contents, types.TextResourceContents)
    assert str(contents.uri) == "test://static-text"
    assert contents.mime_type == "text/plain"
    assert contents.text == "This is the content of the static text resource."


async def test_static_binary_resource_reads_as_a_png_blob(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            read = await client.read_resource("test://static-binary")
    (contents,) = read.contents
    assert isinstance(contents, types.BlobResourceContents)
    assert contents.mime_type == "image/png"
    assert base64.b64decode(contents.blob).startswith(PNG_SIGNATURE)


async def test_template_is_listed_and_reads_resolve_through_it(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            templates = await client.list_resource_templates()
            read = await client.read_resource("test://template/42/data")
    assert "test://template/{id}/data" in {template.uri_template for template in templates.resource_templates}
    (contents,) = read.contents
    assert isinstance(contents, types.TextResourceContents)
    assert str(contents.uri) == "test://template/42/data"
    assert contents.mime_type == "application/json"
    assert json.loads(contents.text) == {"id": "42", "templateTest": True, "data": "Data for ID: 42"}


async def test_unknown_resource_is_resource_not_found(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            with pytest.raises(MCPError) as raised:
                await client.read_resource("test://no-such-resource")
    assert raised.value.code == RESOURCE_NOT_FOUND


async def test_subscribe_and_unsubscribe_succeed(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            subscribed = await client.subscribe_resource("test://watched-resource")
            unsubscribed = await client.unsubscribe_resource("test://watched-resource")
    assert isinstance(subscribed, types.EmptyResult)
    assert isinstance(unsubscribed, types.EmptyResult)


# ---- prompts and completion ---------------------------------------------------------------------------


async def test_prompts_list_the_fixture_prompts(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            listed = await client.list_prompts()
    prompts = {prompt.name: prompt for prompt in listed.prompts}
    assert set(prompts) >= CONFORMANCE_PROMPTS
    arguments = prompts["test_prompt_with_arguments"].arguments or []
    assert {(argument.name, argument.required) for argument in arguments} == {("arg1", True), ("arg2", True)}


async def test_prompt_arguments_are_filled_in(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "alpha", "arg2": "beta"})
    (message,) = prompt.messages
    assert message.role == "user"
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Prompt with arguments: arg1='alpha', arg2='beta'"


async def test_a_python_prompt_asks_over_the_stream_and_renders_with_the_answer(conformance_url: str) -> None:
    asked: list[tuple[Any, str]] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append((context.request_id, params.message))
        return types.ElicitResult(action="accept", content={"context": "a code review"})

    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url, elicitation_callback=elicit) as client:
            prompt = await client.get_prompt("test_input_required_result_prompt")
    (message,) = prompt.messages
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Prompt with context: a code review"
    # The same function asked through a server-to-client request on the prompts/get response stream.
    ((request_id, question),) = asked
    assert str(request_id).startswith("srv-") and question == "What context should the prompt use?"


async def test_prompt_embeds_the_requested_resource(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            prompt = await client.get_prompt(
                "test_prompt_with_embedded_resource", {"resourceUri": "test://static-text"}
            )
    embedded, instruction = prompt.messages
    assert isinstance(embedded.content, types.EmbeddedResource)
    assert str(embedded.content.resource.uri) == "test://static-text"
    assert isinstance(instruction.content, types.TextContent)
    assert instruction.content.text == "Please process the embedded resource above."


async def test_prompt_with_image_returns_a_png(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            prompt = await client.get_prompt("test_prompt_with_image")
    image, _ = prompt.messages
    assert isinstance(image.content, types.ImageContent)
    assert base64.b64decode(image.content.data).startswith(PNG_SIGNATURE)


async def test_prompt_without_a_required_argument_is_invalid_params(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            with pytest.raises(MCPError) as raised:
                await client.get_prompt("test_prompt_with_arguments", {"arg1": "alpha"})
    assert raised.value.code == INVALID_PARAMS


async def test_unknown_prompt_is_invalid_params(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            with pytest.raises(MCPError) as raised:
                await client.get_prompt("no_such_prompt")
    assert raised.value.code == INVALID_PARAMS


async def test_completion_offers_the_argument_values_with_the_typed_prefix(paged_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(paged_url) as client:
            completed = await client.complete(
                types.PromptReference(type="ref/prompt", name=PAGED_PROMPT), {"name": "language", "value": "p"}
            )
            everything = await client.complete(
                types.PromptReference(type="ref/prompt", name=PAGED_PROMPT), {"name": "language", "value": ""}
            )
    assert completed.completion.values == ["python", "perl", "php"]
    assert everything.completion.values == PAGED_LANGUAGES


async def test_completion_of_a_conformance_prompt_argument_answers(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with legacy_client(conformance_url) as client:
            completed = await client.complete(
                types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                {"name": "arg1", "value": ""},
            )
    assert len(completed.completion.values) <= 100
    assert all(isinstance(value, str) for value in completed.completion.values)


# ---- 2024-11-05 HTTP+SSE ------------------------------------------------------------------------------


async def test_sse_transport_client_calls_a_tool_and_answers_sampling(live_platform: LiveServer) -> None:
    async def sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="over SSE"), model="e2e-model"
        )

    with anyio.fail_after(TEST_DEADLINE):
        transport = sse_client(live_platform.sse_endpoint(), timeout=10.0, sse_read_timeout=REQUEST_TIMEOUT)
        async with legacy_client(transport, sampling_callback=sample) as client:
            assert client.protocol_version == "2025-11-25"
            simple = await client.call_tool("test_simple_text", {})
            sampled = await client.call_tool("test_sampling", {"prompt": "Say something"})
    assert only_text(simple) == "This is a simple text response for testing."
    assert only_text(sampled) == "LLM response: over SSE"


async def test_a_2024_11_05_client_gets_its_version_over_http_sse(live_platform: LiveServer) -> None:
    """By hand, since the SDK always proposes its newest handshake version."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=REQUEST_TIMEOUT)) as http:
        with anyio.fail_after(TEST_DEADLINE):
            sse_url = live_platform.sse_endpoint()
            async with http.stream("GET", sse_url, headers={"Accept": "text/event-stream"}) as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
                events = sse_events(stream)
                endpoint = await anext(events)
                assert endpoint.event == "endpoint"
                post_url = str(httpx.URL(sse_url).join(endpoint.data))

                async def answer_to(request_id: int) -> dict[str, Any]:
                    async for event in events:
                        message = event.message()
                        if message is not None and message.get("id") == request_id and "method" not in message:
                            return message
                    pytest.fail("the SSE stream ended before the response")

                params = {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": CLIENT_INFO}
                posted = await http.post(post_url, json=request_message(1, "initialize", params))
                assert posted.status_code == 202, posted.text
                initialized = await answer_to(1)
                assert initialized["result"]["protocolVersion"] == "2024-11-05"
                assert "tools" in initialized["result"]["capabilities"]

                notified = await http.post(post_url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
                assert notified.status_code == 202, notified.text
                called = await http.post(
                    post_url, json=request_message(2, "tools/call", {"name": "test_simple_text", "arguments": {}})
                )
                assert called.status_code == 202, called.text
                result = (await answer_to(2))["result"]
    assert result["content"] == [{"type": "text", "text": "This is a simple text response for testing."}]
