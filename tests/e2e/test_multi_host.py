"""The platform on hosts with a network between them (``tests/e2e/hosts.py``): a session, its streams and a task
move between web hosts; a web host cut off from Redis and the worker host cut off from the database ride it out;
calls with the database 1 and 5 ms away. One topology for the module: each test heals what it cuts."""

from __future__ import annotations

import os
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack
from typing import Any

import anyio
import pytest

from tests.e2e import netns
from tests.e2e.faults import DEMO_TENANT
from tests.e2e.hosts import HOSTS_KEY, Hosts, start_hosts
from tests.e2e.live import PRODUCTION_ONLY, in_tenant
from tests.e2e.raw_http import (
    RawSession,
    SseEvent,
    is_progress,
    next_message,
    post_until_first_progress,
    raw_http_client,
    request_message,
    resume_until_response,
    sse_events,
    stateless_headers,
    stateless_request,
)
from tests.e2e.task_calls import count_slowly, counted_to, counting, finished, stateless, until

pytestmark = [*PRODUCTION_ONLY, pytest.mark.timeout(300)]

TEST_DEADLINE = 60.0
# How long A may take to notice that its GET stream's client left (its next write: a keep-alive every 2 s).
STREAM_RELEASE_DEADLINE = 10.0
# How long a partition lasts: long enough for every connection across it to have stalled (TCP retransmits at
# 0.2, 0.6, 1.4, 3 s ...), shorter than a task's lease (30 s), which the worker test is not about.
PARTITION_SECONDS = 8.0
# After a heal, TCP's next retransmission can be a backoff interval away (up to ~6 s after 8 s cut off).
RECOVERY_DEADLINE = 30.0
# Requests that need only PostgreSQL, on a web host cut off from Redis.
CUT_OFF_CALL_DEADLINE = 5.0
# A task created there: its Celery message cannot be sent. The broker connection's read timeout (3 s), then
# Celery's reconnections (3 s each) give up; the task is stored and the sweep sends its message after the heal.
CUT_OFF_TASK_DEADLINE = 25.0
ROUND_TRIPS_MS = (0.0, 1.0, 5.0)
CALLS_PER_POINT = 30


@pytest.fixture(scope="module")
def hosts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosts]:
    reason = netns.unavailable()
    if reason is not None:
        pytest.skip(reason)
    with ExitStack() as stack:
        topology = start_hosts(stack, tmp_path_factory.mktemp("hosts"), os.environ["DATABASE_URL"])
        request.config.stash[HOSTS_KEY] = topology
        try:
            yield topology
        finally:
            del request.config.stash[HOSTS_KEY]


def tool_created(name: str) -> str:
    return in_tenant(DEMO_TENANT, f"services.tool_create(tenant=tenant, name={name!r}, config={{'content': []}})")


async def next_notification(events: Any) -> SseEvent:
    async for event in events:
        if event.message() is not None:
            return event
    raise AssertionError("the stream ended without a message")


# ---- moving between web hosts ------------------------------------------------------------------------------


async def test_a_session_its_streams_and_its_task_move_between_the_web_hosts_without_loss(hosts: Hosts) -> None:
    first, second = f"moved_{secrets.token_hex(3)}", f"moved_{secrets.token_hex(3)}"
    async with raw_http_client() as http:
        on_a = RawSession(http, hosts.endpoint(DEMO_TENANT, web=0))
        with anyio.fail_after(TEST_DEADLINE):
            await on_a.initialize()
            on_b = on_a.joined(hosts.endpoint(DEMO_TENANT, web=1))

            # The standalone GET stream: opened on A, dropped, resumed on B after its last event.
            async with on_a.stream_get() as stream:
                assert stream.status_code == 200
                events = sse_events(stream)
                await anext(events)  # the priming event: the stream listens
                await hosts.amanage("shell", "-c", tool_created(first))
                heard_on_a = await next_notification(events)
            assert heard_on_a.id is not None
            with anyio.fail_after(STREAM_RELEASE_DEADLINE):
                while True:
                    async with on_b.stream_get(last_event_id=heard_on_a.id) as stream:
                        if stream.status_code == 409:  # A has not noticed yet that its client left
                            await anyio.sleep(0.2)
                            continue
                        assert stream.status_code == 200
                        events = sse_events(stream)
                        await hosts.amanage("shell", "-c", tool_created(second))
                        heard_on_b = await next_notification(events)
                        break

            # A call's response stream: dropped on A after its first progress, resumed on B.
            call_id = on_a.next_id()
            arguments = {"steps": 3, "delay_ms": 300}
            call = request_message(
                call_id, "tools/call", {"name": "count_slowly", "arguments": arguments, "_meta": {"progressToken": 1}}
            )
            before = await post_until_first_progress(on_a, call)
            assert before[-1].id is not None
            after = await resume_until_response(on_b, before[-1].id, call_id)

            # A task: created on A, its result fetched on B, its status read on A.
            created = await on_a.call(
                "tools/call", {"name": "count_slowly", "arguments": {"steps": 2, "delay_ms": 100}, "task": {}}
            )
            task_id = created["result"]["task"]["taskId"]
            result = await on_b.call("tasks/result", {"taskId": task_id})
            status = await on_a.call("tasks/get", {"taskId": task_id})

    stream_id, _, seq = heard_on_a.id.rpartition(".")
    assert heard_on_b.id == f"{stream_id}.{int(seq) + 1}", "B carries on A's stream, no event skipped"
    heard = [(event.message() or {}).get("method") for event in (heard_on_a, heard_on_b)]
    assert heard == ["notifications/tools/list_changed"] * 2
    messages = [m for m in (e.message() for e in before + after) if m is not None]
    assert [m["params"]["progress"] for m in messages if is_progress(m)] == [1, 2, 3], "each progress once, in order"
    assert [m.get("id") for m in messages if not is_progress(m)] == [call_id]
    assert messages[-1]["result"]["content"] == counted_to(3)
    assert result["result"]["content"] == counted_to(2)
    assert status["result"]["status"] == "completed"


# ---- the database's distance -------------------------------------------------------------------------------


async def timed(calls: int, call: Callable[[], Awaitable[None]]) -> list[float]:
    """How long each of ``calls`` calls in a row took (milliseconds)."""
    timings = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        timings.append((time.perf_counter() - started) * 1000)
    return timings


async def test_calls_work_in_both_eras_with_the_database_1_and_5_ms_away(hosts: Hosts) -> None:
    """Each era's calls at 0, 1 and 5 ms of round trip to PostgreSQL, on web host A; the medians are printed.
    ``initialize`` stores the session and ``tasks/get`` reads the task: each waits on the database at least once."""
    url = hosts.endpoint(DEMO_TENANT, web=0)
    medians: dict[float, dict[str, float]] = {}
    async with raw_http_client() as http:
        task_id = await count_slowly(http, url, 1, 0)
        await until(http, url, task_id, finished, TEST_DEADLINE, every=0.2)
        session = RawSession(http, url)
        await session.initialize()

        async def stateless_call() -> None:
            result = await stateless(http, url, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            assert result["structuredContent"] == {"sum": 3}

        async def stateless_task_get() -> None:
            assert (await stateless(http, url, "tasks/get", {"taskId": task_id}))["status"] == "completed"

        async def handshake_initialize() -> None:
            await RawSession(http, url).initialize()

        async def handshake_call() -> None:
            answer = await session.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            assert answer["result"]["structuredContent"] == {"sum": 3}

        cases = {
            "2026-07-28 tools/call": stateless_call,
            "2026-07-28 tasks/get": stateless_task_get,
            "2025-11-25 initialize": handshake_initialize,
            "2025-11-25 tools/call": handshake_call,
        }
        try:
            for round_trip in ROUND_TRIPS_MS:
                hosts.set_database_round_trip(round_trip)
                point = {"SELECT 1": await anyio.to_thread.run_sync(hosts.database_round_trip) * 1000}
                with anyio.fail_after(TEST_DEADLINE):
                    for name, call in cases.items():
                        for _ in range(3):  # new connections and cold caches stay out of the timings
                            await call()
                        point[name] = statistics.median(await timed(CALLS_PER_POINT, call))
                medians[round_trip] = point
        finally:
            hosts.set_database_round_trip(0)

    names = list(medians[0.0])
    print("\nmedian ms at a round trip to PostgreSQL of " + ", ".join(f"{rtt:g} ms" for rtt in medians))
    for name in names:
        print(f"  {name:24} " + "  ".join(f"{medians[rtt][name]:7.2f}" for rtt in medians))
    # Only lower bounds: on a shared machine any figure can be late, none can be early.
    for round_trip, point in medians.items():
        for name in ("SELECT 1", "2026-07-28 tasks/get", "2025-11-25 initialize"):
            assert point[name] >= round_trip, (name, point)


# ---- partitions ------------------------------------------------------------------------------------------


async def test_a_web_host_cut_off_from_redis_serves_what_needs_only_the_database_and_recovers(hosts: Hosts) -> None:
    on_a, on_b = hosts.endpoint(DEMO_TENANT, web=0), hosts.endpoint(DEMO_TENANT, web=1)
    change = f"after_heal_{secrets.token_hex(3)}"
    timings: dict[str, float] = {}
    async with raw_http_client() as http:
        await stateless(http, on_a, "tools/call", {"name": "platform_info", "arguments": {}})
        with hosts.network.partitioned(hosts.web(0).address, hosts.redis_address):
            started = time.monotonic()
            with anyio.fail_after(CUT_OFF_CALL_DEADLINE):
                added = await stateless(http, on_a, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
            timings["stateless call on A"] = time.monotonic() - started
            started = time.monotonic()
            with anyio.fail_after(CUT_OFF_CALL_DEADLINE):
                session = RawSession(http, on_a)
                await session.initialize()
                listed = await session.call("tools/list")
            timings["session on A"] = time.monotonic() - started
            started = time.monotonic()
            with anyio.fail_after(CUT_OFF_TASK_DEADLINE):
                task_id = await count_slowly(http, on_a, 1, 0)
            timings["task created on A"] = time.monotonic() - started
            with anyio.fail_after(CUT_OFF_CALL_DEADLINE):
                elsewhere = await stateless(http, on_b, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        healed = time.monotonic()
        done = await until(http, on_b, task_id, finished, RECOVERY_DEADLINE, every=0.2)
        timings["task done after the heal"] = time.monotonic() - healed

        # A hears changes through Redis again: a listen stream on A is told of a tool made elsewhere.
        listen = stateless_request("after-heal", "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        with anyio.fail_after(RECOVERY_DEADLINE):
            while True:
                async with http.stream(
                    "POST", on_a, json=listen, headers=stateless_headers("subscriptions/listen")
                ) as stream:
                    assert stream.status_code == 200
                    events = sse_events(stream)
                    acknowledged = await next_message(events)
                    await hosts.amanage("shell", "-c", tool_created(change))
                    with anyio.move_on_after(3):
                        heard = await next_message(events)
                        break
        timings["A hears a change after the heal"] = time.monotonic() - healed

    print("\n" + "\n".join(f"  {name}: {seconds:.2f} s" for name, seconds in timings.items()))
    assert added["structuredContent"] == {"sum": 5}
    assert "count_slowly" in {tool["name"] for tool in listed["result"]["tools"]}
    assert elsewhere["structuredContent"] == {"sum": 2}
    assert done["status"] == "completed" and done["result"]["content"] == counted_to(1), done
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
    assert heard["method"] == "notifications/tools/list_changed"


async def test_the_worker_cut_off_from_the_database_mid_task_finishes_it_once_after_the_heal(hosts: Hosts) -> None:
    on_a, on_b = hosts.endpoint(DEMO_TENANT, web=0), hosts.endpoint(DEMO_TENANT, web=1)
    steps = 6
    async with raw_http_client() as http:
        task_id = await count_slowly(http, on_a, steps, 500)
        await until(http, on_a, task_id, counting, TEST_DEADLINE, every=0.2)
        with hosts.network.partitioned(hosts.worker.address, hosts.postgres_address):
            await anyio.sleep(PARTITION_SECONDS)
            # The web hosts still answer for the task: it is working, as far as the database knows.
            during = await stateless(http, on_b, "tasks/get", {"taskId": task_id})
        healed = time.monotonic()
        done = await until(http, on_b, task_id, finished, RECOVERY_DEADLINE, every=0.2)
        took = time.monotonic() - healed

    print(f"\nfinished {took:.1f} s after the heal")
    assert during["status"] == "working", during
    assert done["status"] == "completed" and done["result"]["content"] == counted_to(steps), done
    run = await anyio.to_thread.run_sync(hosts.tool_run, task_id)
    assert (run["generation"], run["attempts"]) == (1, 1), f"the call ran once, by its first start: {run}"
