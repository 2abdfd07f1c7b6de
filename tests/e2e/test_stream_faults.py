"""Streams that outlive a fault: a web process killed mid-call, Redis restarted under open streams.

Real processes of a topology of the test's own (``fault_topology``), killed and restarted for real.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from tests.e2e.faults import DEMO_TENANT, Topology
from tests.e2e.live import PRODUCTION_ONLY
from tests.e2e.raw_http import (
    RawSession,
    SseEvent,
    is_progress,
    raw_http_client,
    request_message,
    sse_events,
)

pytestmark = PRODUCTION_ONLY

# Keep-alives every second: a stream's lease lapses after two missed keep-alives plus 5 s (7 s here).
KEEPALIVE_SECONDS = "1"
TEST_DEADLINE = 90.0
# Well under what a lost membership used to cost (the mailbox re-joined only every 300 s).
RECOVERY_DEADLINE = 30.0
CREATE_TOOL = (
    "services.tool_create(tenant=tenant, name={name!r}, config={{'content': [{{'type': 'text', 'text': 'x'}}]}})"
)


@pytest.fixture(autouse=True)
def _short_keepalive(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set before the topology starts (autouse fixtures come first): its processes inherit the environment."""
    monkeypatch.setenv("MCP_SSE_KEEPALIVE", KEEPALIVE_SECONDS)


async def _read_until_progress(events: AsyncIterator[SseEvent], count: int) -> list[SseEvent]:
    seen: list[SseEvent] = []
    async for event in events:
        seen.append(event)
        if sum(is_progress(e.message()) for e in seen) == count:
            return seen
    raise AssertionError(f"the stream ended after {seen}")


async def test_a_stream_whose_process_was_killed_ends_with_an_error_when_resumed_elsewhere(
    fault_topology: Topology,
) -> None:
    topology = fault_topology
    async with raw_http_client() as http:
        on_a = RawSession(http, topology.endpoint(DEMO_TENANT, web=0))
        with anyio.fail_after(TEST_DEADLINE):
            await on_a.initialize()
            call_id = on_a.next_id()
            params = {
                "name": "count_slowly",
                "arguments": {"steps": 50, "delay_ms": 500},
                "_meta": {"progressToken": 1},
            }
            async with on_a.stream_post(request_message(call_id, "tools/call", params)) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                before = await _read_until_progress(sse_events(response), 3)
                topology.kill_web(0)
            last_seen = before[-1].id
            assert last_seen is not None

            on_b = on_a.joined(topology.endpoint(DEMO_TENANT, web=1))
            after: list[SseEvent] = []
            async with on_b.stream_get(last_event_id=last_seen) as resumed:
                assert resumed.status_code == 200, await resumed.aread()
                async for event in sse_events(resumed):
                    after.append(event)
            # The stream ended on its own (the loop above finished): nothing hangs.

    progress = [m["params"]["progress"] for m in (e.message() for e in before + after) if is_progress(m)]
    assert progress == sorted(set(progress)), f"a progress notification came twice or out of order: {progress}"
    answers = [m for m in (e.message() for e in after) if m is not None and m.get("id") == call_id]
    assert len(answers) == 1, after
    (answer,) = answers
    assert answer["error"]["code"] == -32603, answer
    assert answer["error"]["data"] == {"reason": "server_stopped"}
    assert "stopped" in answer["error"]["message"]
    assert answer == after[-1].message(), "the error is the stream's last event"

    # Resuming again replays the same end, from the database.
    async with raw_http_client() as http:
        again = RawSession(http, topology.endpoint(DEMO_TENANT, web=1))
        again.session_id = on_a.session_id
        with anyio.fail_after(TEST_DEADLINE):
            async with again.stream_get(last_event_id=last_seen) as replay:
                replayed = [e async for e in sse_events(replay)]
    assert [e.message() for e in replayed] == [e.message() for e in after]
