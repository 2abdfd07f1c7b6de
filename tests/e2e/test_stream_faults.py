"""Streams that outlive a fault: a web process killed mid-call, Redis restarted under open streams.

Real processes of a topology of the test's own (``fault_topology``), killed and restarted for real.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from tests.e2e.faults import DEMO_TENANT, Topology
from tests.e2e.live import PRODUCTION_ONLY, in_tenant
from tests.e2e.raw_http import (
    RawSession,
    SseEvent,
    is_progress,
    next_message,
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


async def _first_list_changed(events: AsyncIterator[SseEvent], heard: anyio.Event) -> None:
    message = await next_message(events)
    assert message["method"] == "notifications/tools/list_changed", message
    heard.set()


async def test_list_changed_reaches_streams_opened_before_and_after_a_redis_restart(fault_topology: Topology) -> None:
    """Redis restarts without its data: every group membership is gone. A stream opened afterwards hears the next
    change; one opened before hears changes again within seconds (a nudge sent in between may be lost: at most
    once), not after the memberships' five-minute refresh."""
    topology = fault_topology
    slug = await topology.atenant_create("redis")
    async with raw_http_client() as http:
        old = RawSession(http, topology.endpoint(slug, web=0))
        new = RawSession(http, topology.endpoint(slug, web=1))
        with anyio.fail_after(TEST_DEADLINE):
            await old.initialize()
            await new.initialize()
            await new.call("tools/list")  # web 1 caches the tenant: its mailbox holds the tenant's group
            async with old.stream_get() as old_stream, anyio.create_task_group() as group:
                old_events = sse_events(old_stream)
                await anext(old_events)  # priming: the stream has joined the tenant's group
                old_heard = anyio.Event()
                group.start_soon(_first_list_changed, old_events, old_heard)

                topology.restart_redis()

                async with new.stream_get() as new_stream:
                    new_events = sse_events(new_stream)
                    await anext(new_events)
                    new_heard = anyio.Event()
                    group.start_soon(_first_list_changed, new_events, new_heard)
                    await topology.amanage("shell", "-c", in_tenant(slug, CREATE_TOOL.format(name="first")))
                    with anyio.fail_after(RECOVERY_DEADLINE):
                        await new_heard.wait()
                        for attempt in range(100):
                            if old_heard.is_set():
                                break
                            create = in_tenant(slug, CREATE_TOOL.format(name=f"again_{attempt}"))
                            await topology.amanage("shell", "-c", create)
                        await old_heard.wait()


async def test_a_session_starts_while_redis_is_down(fault_topology: Topology) -> None:
    """The channel layer only nudges: with Redis gone, a tenant not cached yet is still served from the database."""
    topology = fault_topology
    slug = await topology.atenant_create("down")
    topology.redis.kill()
    try:
        async with raw_http_client() as http:
            with anyio.fail_after(TEST_DEADLINE):
                session = RawSession(http, topology.endpoint(slug, web=0))
                await session.initialize()
                listed = await session.call("tools/list")
    finally:
        topology.redis.start()
    assert listed["result"]["tools"] == []


async def test_a_session_outlives_the_web_process_that_started_it(fault_topology: Topology) -> None:
    """The row is the session; a process's memo of it is only a copy, gone with the process and not missed."""
    topology = fault_topology
    async with raw_http_client() as http:
        with anyio.fail_after(TEST_DEADLINE):
            on_0 = RawSession(http, topology.endpoint(DEMO_TENANT, web=0))
            await on_0.initialize()
            before = await on_0.call("tools/list")
            topology.kill_web(0)
            topology.start_web(0)
            after = await on_0.call("tools/list")
            on_1 = on_0.joined(topology.endpoint(DEMO_TENANT, web=1))
            ended = await http.delete(on_1.url, headers=on_1.headers())
            # Web 0 remembers the session again; the end reaches it as a signal (milliseconds), well within the TTL.
            with anyio.fail_after(3.0):
                while (await on_0.post(request_message(on_0.next_id(), "tools/list"))).status_code != 404:
                    pass
    assert after["result"]["tools"] == before["result"]["tools"]
    assert ended.status_code == 200, ended.text
