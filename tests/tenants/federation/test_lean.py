"""The lean path of proxied upstream requests, against a real SDK upstream process in both eras (2026-07-28 and the
initialize handshake): the same answers as the SDK client, one kept-alive connection, progress and logs relayed
from event streams, the upstream's questions answered through the downstream call's context, cancellation heard
upstream, and the SDK client still serving what the lean path hands back (2026-07-28 input_required)."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from mcp_core.errors import MISSING_CLIENT_CAPABILITY
from tenants.federation.connection import UpstreamConnection, UpstreamTarget
from tests.e2e.upstreams import UpstreamServer, upstream_server

pytestmark = pytest.mark.anyio

ERAS = {"auto": "2026-07-28", "legacy": "2025-11-25"}
DEADLINE = 30.0


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamServer]:
    with ExitStack() as stack:
        yield upstream_server(stack, Path(tmp_path_factory.mktemp("lean-upstream")))


@pytest.fixture(params=sorted(ERAS))
async def connection(request: Any, upstream: UpstreamServer, settings: Any) -> AsyncIterator[UpstreamConnection]:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}
    target = UpstreamTarget(None, 0, "lean", upstream.url, None, 1)
    opened = UpstreamConnection(target, mode=request.param)
    await opened.open()
    assert opened.protocol_version == ERAS[request.param]
    assert opened.lean is not None
    yield opened
    await opened.close()


def text(result: dict[str, Any]) -> str:
    return " ".join(block["text"] for block in result["content"] if block["type"] == "text")


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {DEADLINE}s")
        await asyncio.sleep(0.05)


async def test_lean_answers_are_the_sdk_clients_answers(connection: UpstreamConnection) -> None:
    client = connection.client
    for name, arguments in (("echo", {"text": "hi"}), ("weather", {"city": "Oslo"}), ("fail", {})):
        lean = await connection.call_tool(name, arguments)
        sdk = (await client.call_tool(name, arguments)).model_dump(by_alias=True, mode="json", exclude_none=True)
        keys = ("content", "structuredContent", "isError")
        assert {k: lean.get(k) for k in keys} == {k: sdk.get(k) for k in keys}, name
    assert (await connection.call_tool("weather", {"city": "Oslo"}))["structuredContent"] == {
        "city": "Oslo",
        "celsius": 21.5,
    }
    assert (await connection.call_tool("fail", {}))["isError"] is True
    read = await connection.read_resource("notes://readme")
    sdk_read = await client.read_resource("notes://readme", cache_mode="bypass")
    assert read["contents"] == [c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in sdk_read.contents]
    if connection.protocol_version >= "2026":
        assert (read["ttlMs"], read["cacheScope"]) == (sdk_read.ttl_ms, sdk_read.cache_scope) == (0, "private")
    prompt = await connection.get_prompt("greet", {"name": "Ada"})
    assert prompt["messages"][0]["content"]["text"] == "Please greet Ada."


async def test_connections_are_kept_alive_between_calls(connection: UpstreamConnection) -> None:
    # 2026-07-28: JSON answers, one connection for sequential calls. Handshake era: event-stream answers, whose end
    # is read in the background after the answer, so the connection is kept once the stream ended.
    lean = connection.lean
    assert lean is not None
    for index in range(5):
        assert text(await connection.call_tool("echo", {"text": str(index)})) == f"echo: {index}"

    async def kept() -> bool:
        return lean.http.idle_connections >= 1

    await eventually(kept, "a kept-alive connection")
    if connection.protocol_version >= "2026":
        assert lean.http.idle_connections == 1


async def test_progress_and_logs_of_an_event_stream_reach_the_call(
    connection: UpstreamConnection, make_context: Any
) -> None:
    ctx, outbound = make_context(progress_token="p", log_level="debug")
    with connection.relay.call(ctx):
        result = await connection.call_tool("slow_count", {"steps": 3}, progress=ctx.report_progress)
    assert text(result) == "counted to 3"
    progress = [params for method, params in outbound.notifications if method == "notifications/progress"]
    assert [(p["progress"], p["total"], p["message"]) for p in progress] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]
    logs = [params["data"] for method, params in outbound.notifications if method == "notifications/message"]
    assert logs == ["counted 1", "counted 2", "counted 3"]


async def test_the_upstream_is_asked_only_for_the_logs_and_progress_the_downstream_call_passes_on(
    connection: UpstreamConnection, make_context: Any
) -> None:
    # 2026-07-28 asks for logs per request (from the downstream call's threshold up, or not at all); the handshake
    # era set its level once for the session, and puts no level in a request. A progress token goes with a call
    # only when the caller takes progress.
    modern = connection.protocol_version >= "2026"

    async def meta(ctx: Any, progress: Any = None) -> dict[str, Any]:
        with connection.relay.call(ctx):
            seen: dict[str, Any] = json.loads(text(await connection.call_tool("call_meta", {}, progress=progress)))
        return seen

    quiet, _ = make_context(stateless=True)
    assert await meta(quiet) == {"progressToken": None, "logLevel": None}
    warnings, _ = make_context(stateless=True, log_level="warning", progress_token="p")
    seen = await meta(warnings, warnings.report_progress)
    assert seen["logLevel"] == ("warning" if modern else None)
    assert seen["progressToken"] is not None
    handshake, _ = make_context()  # a handshake-era downstream session without a level takes every message
    assert (await meta(handshake))["logLevel"] == ("debug" if modern else None)


async def test_a_2026_upstream_is_told_the_capabilities_of_the_calls_client(
    connection: UpstreamConnection, make_context: Any
) -> None:
    # What the platform relays, narrowed to what the downstream call's client declared, on the lean path and the
    # SDK's alike; everything it relays outside a call. The handshake era declares once, at initialize.
    modern = connection.protocol_version >= "2026"

    async def told(ctx: Any = None, *, sdk: bool = False) -> Any:
        async def call() -> dict[str, Any]:
            if sdk:
                answer = await connection.client.call_tool("call_capabilities", {})
                return answer.model_dump(by_alias=True, mode="json", exclude_none=True)
            return await connection.call_tool("call_capabilities", {})

        if ctx is None:
            return json.loads(text(await call()))
        with connection.relay.call(ctx):
            return json.loads(text(await call()))

    everything = {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": True}}
    bare, _ = make_context(stateless=True)
    rich, _ = make_context(
        stateless=True,
        capabilities={
            "elicitation": {},
            "sampling": {"tools": {}},
            "roots": {"listChanged": False},  # a false flag is not declared
            "experimental": {"x": {}},
        },
    )
    links, _ = make_context(capabilities={"elicitation": {"url": {}}})
    if not modern:
        assert [await told(), await told(bare), await told(rich)] == [None, None, None]
        return
    assert await told() == everything
    assert await told(bare) == {}
    assert await told(bare, sdk=True) == {}
    assert await told(rich) == {"elicitation": {}, "sampling": {}, "roots": {}}
    assert await told(links) == {"elicitation": {"url": {}}}
    assert await told(links, sdk=True) == {"elicitation": {"url": {}}}


async def test_a_2026_upstream_refuses_a_question_the_calls_client_could_not_answer(
    connection: UpstreamConnection, make_context: Any
) -> None:
    # Told the client has no elicitation, the upstream says so (-32021) instead of asking: nothing reaches the
    # downstream client, and the upstream's tool never ran.
    if connection.protocol_version < "2026":
        pytest.skip("the handshake era declares the platform's capabilities once, at initialize")
    label = f"unasked-{secrets.token_hex(3)}"
    ctx, outbound = make_context(stateless=True)
    with connection.relay.call(ctx), pytest.raises(MCPError) as refused:
        await connection.call_tool("ask_name", {"label": label})
    assert refused.value.error.code == MISSING_CLIENT_CAPABILITY
    assert "elicitation" in refused.value.error.message
    assert outbound.requests == []
    assert label not in text(await connection.call_tool("answers_received", {}))


async def test_the_upstreams_questions_are_answered_by_the_downstream_client(
    connection: UpstreamConnection, make_context: Any
) -> None:
    # Handshake era: requests on the call's event stream, answered by POST from the lean path. 2026-07-28: an
    # input_required result, handed back to the SDK client's driver.
    label = f"ask-{secrets.token_hex(3)}"
    ctx, outbound = make_context(
        capabilities={"elicitation": {}, "roots": {}},
        answers={
            "elicitation/create": {"action": "accept", "content": {"name": "Ada"}},
            "roots/list": {"roots": [{"uri": "file:///work"}]},
        },
    )
    with connection.relay.call(ctx):
        assert text(await connection.call_tool("ask_name", {"label": label})) == "hello Ada"
        assert text(await connection.call_tool("roots", {})) == "file:///work"
    assert [method for method, _ in outbound.requests] == ["elicitation/create", "roots/list"]
    answers = text(await connection.call_tool("answers_received", {}))
    assert answers.count(f"{label}:accept") == 1


async def test_a_cancelled_call_is_cancelled_upstream(connection: UpstreamConnection) -> None:
    label = f"cancel-{secrets.token_hex(3)}"
    call = asyncio.get_running_loop().create_task(connection.call_tool("wait_forever", {"label": label}))
    # The upstream has the call in flight once the response head arrived (an event stream) or a moment later.
    done, _ = await asyncio.wait({call}, timeout=0.5)
    assert not done
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    async def heard() -> bool:
        return label in text(await connection.call_tool("cancelled_calls", {}))

    await eventually(heard, "the upstream's cancellation")


async def test_lean_calls_off_keeps_every_request_on_the_sdk(upstream: UpstreamServer, settings: Any) -> None:
    settings.MCP_PLATFORM = {
        **settings.MCP_PLATFORM,
        "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"],
        "UPSTREAM_LEAN_CALLS": False,
    }
    connection = UpstreamConnection(UpstreamTarget(None, 0, "sdk", upstream.url, None, 1))
    await connection.open()
    try:
        assert connection.lean is None
        assert text(await connection.call_tool("echo", {"text": "sdk"})) == "echo: sdk"
    finally:
        await connection.close()
