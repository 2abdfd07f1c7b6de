"""A web process stopped with SIGTERM drains (``mcp_infra.serving.drain``, ``mcp_platform.gateway.drain``): it is
not ready at once, lets its clients carry on elsewhere, finishes or answers its requests within the drain, then
exits. On a production topology of the test's own, whose first web process is signalled with every kind of stream
open; the times it prints are the ones docs/operations.md quotes."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import httpx
import pytest

from tests.e2e.faults import DEMO_TENANT, Topology
from tests.e2e.live import PRODUCTION_ONLY
from tests.e2e.raw_http import (
    RawSession,
    SseEvent,
    is_progress,
    raw_http_client,
    request_message,
    resume_until_response,
    sse_events,
    stateless_headers,
    stateless_request,
)

pytestmark = PRODUCTION_ONLY

DRAIN_SECONDS = 5.0
TEST_DEADLINE = 60.0
# A call that ends within the drain, and one that runs well past it.
SHORT_CALL = {"name": "count_slowly", "arguments": {"steps": 6, "delay_ms": 400}, "_meta": {"progressToken": "short"}}
LONG_CALL = {"name": "count_slowly", "arguments": {"steps": 50, "delay_ms": 500}, "_meta": {"progressToken": "long"}}
# What "at once" means on this busy 2-core machine.
AT_ONCE = 1.5


@pytest.fixture(autouse=True)
def _short_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set before the topology starts (autouse fixtures come first): its processes inherit the environment."""
    monkeypatch.setenv("MCP_DRAIN_SECONDS", str(DRAIN_SECONDS))


@dataclass
class Watched:
    """What a client saw of one stream: its events (with the time each arrived), and how and when it ended."""

    events: list[tuple[float, SseEvent]] = field(default_factory=list)
    ended_at: float = 0.0
    failure: str = ""
    opened: anyio.Event = field(default_factory=anyio.Event)
    progressed: anyio.Event = field(default_factory=anyio.Event)

    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages (a 2024-11-05 stream's ``endpoint`` event is not one)."""
        messages = (event.message() for _, event in self.events if event.event == "message")
        return [message for message in messages if message is not None]

    def last_id(self) -> str:
        ids = [event.id for _, event in self.events if event.id]
        assert ids, self.events
        return ids[-1]


async def watch(http: httpx.AsyncClient, method: str, url: str, watched: Watched, **request: Any) -> None:
    """Read one SSE response to its end; it counts as open once ``opened`` says so (its first event)."""
    try:
        async with http.stream(method, url, **request) as response:
            assert response.status_code == 200, await response.aread()
            async for event in sse_events(response):
                watched.events.append((time.monotonic(), event))
                watched.opened.set()
                if event.event == "message" and is_progress(event.message()):
                    watched.progressed.set()
    except httpx.HTTPError as exc:
        watched.failure = f"{type(exc).__name__}: {exc}"
    watched.ended_at = time.monotonic()
    watched.opened.set()


async def watch_call(session: RawSession, request_id: int, call: dict[str, Any], watched: Watched) -> None:
    """A session's POST of ``call``, read as a stream."""
    message = request_message(request_id, "tools/call", call)
    await watch(session.http, "POST", session.url, watched, json=message, headers=session.headers())


async def not_ready(http: httpx.AsyncClient, base: str) -> float:
    """Ask ``/readyz`` until it says no; when it did (monotonic seconds)."""
    for _ in range(int(TEST_DEADLINE * 100)):
        if (await http.get(f"{base}/readyz")).status_code == 503:
            return time.monotonic()
        await anyio.sleep(0.01)
    raise AssertionError("the process stayed ready")


async def test_sigterm_drains_a_web_process_its_clients_carry_on_elsewhere(fault_topology: Topology) -> None:
    topology = fault_topology
    web0, web1 = topology.endpoint(DEMO_TENANT, web=0), topology.endpoint(DEMO_TENANT, web=1)
    base0 = topology.web_urls[0]
    process = topology.web[0]
    assert process is not None
    streams = {name: Watched() for name in ("released", "cut", "standalone", "listen", "legacy")}
    stateless_answer: dict[str, Any] = {}

    with anyio.fail_after(TEST_DEADLINE):
        async with raw_http_client() as http, anyio.create_task_group() as clients:
            assert (await http.get(f"{base0}/readyz")).status_code == 200
            polling = RawSession(http, web0)  # 2025-11-25: knows SSE polling, can be released
            older = RawSession(http, web0, "2025-06-18")  # cannot: its stream stays until its answer
            await polling.initialize()
            await older.initialize()

            clients.start_soon(watch_call, older, older.next_id(), LONG_CALL, streams["cut"])
            get_headers = {**polling.headers(accept="text/event-stream")}
            del get_headers["Content-Type"]
            clients.start_soon(partial(watch, http, "GET", web0, streams["standalone"], headers=get_headers))
            listen = stateless_request("listen", "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
            listen_headers = stateless_headers("subscriptions/listen")
            clients.start_soon(
                partial(watch, http, "POST", web0, streams["listen"], json=listen, headers=listen_headers)
            )
            legacy = topology.sse_endpoint(DEMO_TENANT, web=0)
            clients.start_soon(
                partial(watch, http, "GET", legacy, streams["legacy"], headers={"Accept": "text/event-stream"})
            )

            async def stateless_call() -> None:
                call = {key: value for key, value in LONG_CALL.items() if key != "_meta"}
                response = await http.post(
                    web0,
                    json=stateless_request(1, "tools/call", call),
                    headers=stateless_headers("tools/call", "count_slowly"),
                )
                stateless_answer.update(status=response.status_code, body=response.json(), at=time.monotonic())

            clients.start_soon(stateless_call)
            for name in ("standalone", "listen", "legacy"):
                await streams[name].opened.wait()
            await streams["cut"].progressed.wait()
            # Last, so that it is young at the signal and ends within the drain.
            short_id = polling.next_id()
            clients.start_soon(watch_call, polling, short_id, SHORT_CALL, streams["released"])
            await streams["released"].progressed.wait()

            signalled = time.monotonic()
            os.kill(process.popen.pid, signal.SIGTERM)
            not_ready_after = await not_ready(http, base0) - signalled
            assert (await http.get(f"{base0}/healthz")).status_code == 200, "a draining process is alive"
            status = await anyio.to_thread.run_sync(process.popen.wait, TEST_DEADLINE)
            exited = time.monotonic() - signalled

    for name, watched in streams.items():
        assert not watched.failure, f"the {name} stream did not end cleanly: {watched.failure}\n{topology.logs()}"
    assert status in (0, 128 + signal.SIGTERM), process.tail()
    ended = {name: watched.ended_at - signalled for name, watched in streams.items()}
    print(f"not ready {not_ready_after:.3f} s, exited {exited:.2f} s after SIGTERM; streams ended after {ended}")
    assert not_ready_after < AT_ONCE
    assert exited < DRAIN_SECONDS + 4

    # The released stream ended at once with a retry hint after its last event id; resumed on the other process,
    # it carries on where it stopped and gets the answer the first process gave within the drain.
    released = streams["released"]
    assert ended["released"] < AT_ONCE
    assert released.events[-1][1].retry is not None, released.events[-1]
    async with raw_http_client() as http:
        polling.http = http
        resumed = await resume_until_response(polling.joined(web1), released.last_id(), short_id)
    answer = [e.message() for e in resumed][-1]
    assert answer is not None and answer["result"]["content"][0]["text"] == "Counted to 6.", answer
    after = [m for m in (e.message() for e in resumed) if m is not None]
    progress = [m["params"]["progress"] for m in released.messages() + after if is_progress(m)]
    assert progress == list(range(1, 7)), progress

    # A stream that cannot be released stays until the deadline, then answers that the server stopped.
    (cut_answer,) = [m for m in streams["cut"].messages() if "id" in m and "method" not in m]
    assert cut_answer["error"]["data"] == {"reason": "server_stopped"}, cut_answer
    assert DRAIN_SECONDS - 0.5 < ended["cut"] < DRAIN_SECONDS + 2.5
    assert stateless_answer["status"] == 503, stateless_answer
    assert stateless_answer["body"]["error"]["data"] == {"reason": "server_stopped"}

    # The standalone stream and the listen stream ended at once; the former resumes on the other process.
    assert ended["standalone"] < AT_ONCE and ended["listen"] < AT_ONCE
    async with raw_http_client() as http:
        polling.http = http
        async with polling.joined(web1).stream_get(last_event_id=streams["standalone"].last_id()) as again:
            assert again.status_code == 200, await again.aread()
    # The 2024-11-05 stream carried this process's answers until they were given, then ended.
    assert ended["cut"] <= ended["legacy"] < exited

    # An idle process drains at once.
    idle = topology.web[1]
    assert idle is not None
    signalled = time.monotonic()
    os.kill(idle.popen.pid, signal.SIGTERM)
    await anyio.to_thread.run_sync(idle.popen.wait, TEST_DEADLINE)
    print(f"an idle process exited {time.monotonic() - signalled:.2f} s after SIGTERM")
    assert time.monotonic() - signalled < AT_ONCE + 1
