"""What a handshake-era session stores of a hostile upstream's flood of log messages is bounded: a request stream
keeps at most ``STREAM_MAX_NOTIFICATIONS`` notifications and a session ``SESSION_MAX_STREAM_EVENTS`` events (the
result and one "dropped" message always go through), and once the client left without resuming, the call is
cancelled upstream and nothing more is stored. A real upstream process, a live platform, a raw handshake client."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.live import LiveServer
from tests.e2e.raw_http import RawSession, raw_http_client, request_message, sse_events
from tests.e2e.test_upstream_federation import eventually
from tests.e2e.upstreams import UpstreamServer, federation_platform, upstream_server

pytestmark = pytest.mark.anyio

TEST_DEADLINE = 90.0
PER_STREAM = 1000  # STREAM_MAX_NOTIFICATIONS's default
PER_SESSION = 1500
GRACE_SECONDS = 3
# A stream counts its session's events every 100 notifications; a few more are the opening, the held-back
# messages and the responses.
SESSION_SLACK = 110


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, UpstreamServer]]:
    tmp = Path(tmp_path_factory.mktemp("stream-bounds"))
    with ExitStack() as stack:
        upstream = upstream_server(stack, tmp / "upstream")
        extra = {"MCP_STREAM_RESUME_GRACE": str(GRACE_SECONDS), "MCP_SESSION_MAX_STREAM_EVENTS": str(PER_SESSION)}
        platform = federation_platform(stack, tmp / "platform", extra)
        yield platform, upstream


@pytest.fixture
async def endpoint(processes: tuple[LiveServer, UpstreamServer]) -> str:
    platform, upstream = processes
    slug = await platform.atenant_create("flood")
    await platform.amanage("upstream_add", slug, "up", upstream.url)
    return platform.endpoint(slug)


async def stored_events(platform: LiveServer, session_id: str) -> int:
    output = await platform.amanage(
        "shell",
        "-c",
        "from mcp_platform.gateway.models import StreamEvent; "
        f"print(StreamEvent.objects.filter(session_id={session_id!r}).count())",
    )
    return int(output.strip().splitlines()[-1])


async def cancelled_upstream(session: RawSession) -> list[str]:
    answer = await session.call("tools/call", {"name": "up_cancelled_calls", "arguments": {}})
    return list(answer["result"]["structuredContent"]["result"])


async def flood(session: RawSession, label: str, count: int) -> tuple[int, list[dict[str, Any]], dict[str, Any]]:
    """Call the flooding tool and read its stream to the end: log messages, other notifications, the response."""
    request_id = session.next_id()
    message = request_message(
        request_id, "tools/call", {"name": "up_flood_logs", "arguments": {"label": label, "count": count}}
    )
    logs, others = 0, []
    async with session.stream_post(message) as stream:
        async for event in sse_events(stream):
            received = event.message()
            if received is None:
                continue
            if received.get("id") == request_id:
                return logs, others, received
            if received.get("method") == "notifications/message" and received["params"].get("logger") != "mcp-platform":
                logs += 1
            else:
                others.append(received)
    raise AssertionError("the stream ended without the response")


async def test_a_client_that_stays_gets_the_result_after_a_bounded_number_of_log_messages(
    processes: tuple[LiveServer, UpstreamServer], endpoint: str
) -> None:
    platform, _ = processes
    async with raw_http_client() as http:
        session = RawSession(http, endpoint)
        with anyio.fail_after(TEST_DEADLINE):
            await session.initialize()
            logs, others, response = await flood(session, "stays", 5000)
            stored_after_one = await stored_events(platform, str(session.session_id))
            second_logs, _, second = await flood(session, "again", 5000)
            stored_after_two = await stored_events(platform, str(session.session_id))
    assert response["result"]["content"][0]["text"] == "sent 5000 log messages"
    assert logs == PER_STREAM
    assert [m["params"]["data"] for m in others] == [
        f"4000 notifications of this request were dropped: a request stream keeps at most {PER_STREAM} "
        f"(and a session {PER_SESSION} events)"
    ]
    assert stored_after_one <= PER_STREAM + 10
    # The session's bound: the second call stored only what was left of it (counted every 100 notifications).
    assert second["result"]["content"][0]["text"] == "sent 5000 log messages"
    assert second_logs < PER_SESSION - PER_STREAM + SESSION_SLACK
    assert stored_after_two <= PER_SESSION + SESSION_SLACK


async def test_once_the_client_left_the_upstream_call_is_cancelled_and_nothing_more_is_stored(
    processes: tuple[LiveServer, UpstreamServer], endpoint: str
) -> None:
    platform, _ = processes
    label = f"left-{secrets.token_hex(4)}"
    async with raw_http_client() as http:
        session = RawSession(http, endpoint)
        with anyio.fail_after(TEST_DEADLINE):
            await session.initialize()
            request = {"name": "up_flood_logs", "arguments": {"label": label, "count": 0}}
            seen = 0
            async with session.stream_post(request_message(session.next_id(), "tools/call", request)) as stream:
                async for event in sse_events(stream):
                    seen += event.message() is not None
                    if seen >= 50:
                        break  # the client leaves for good

            async def cancelled() -> bool:
                return label in await cancelled_upstream(session)

            await eventually(cancelled, timeout=GRACE_SECONDS + 20, what="the upstream call's cancellation")
            stored = await stored_events(platform, str(session.session_id))
            stored_later = await stored_events(platform, str(session.session_id))
    assert stored <= PER_STREAM + 10
    assert stored_later == stored
