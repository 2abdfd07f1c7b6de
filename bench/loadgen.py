"""The load generator process: reads one job (JSON) on stdin, drives the server, prints its result (JSON).

Run pinned to its own core (``taskset``) by the harness. Jobs:

- ``closed_loop``: ``concurrency`` connections each keep one request in flight; a warm-up, then ``windows``
  consecutive measurement windows, each with its own req/s, latency percentiles and server CPU per request;
- ``progress``: tool calls whose progress messages carry their emit time; latency = receipt - emit;
- ``sessions``: open handshake sessions and leave them idle (memory);
- ``streams``: open SSE streams (GET streams of handshake sessions, or ``subscriptions/listen``), say ``ready``,
  hold them until a line arrives on stdin (memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.mcp_wire import HANDSHAKE, STATELESS, McpFailure, McpSession, Prepared, Target, next_id, result_of
from bench.stats import summarize

JSONObject = dict[str, Any]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# ---- CPU accounting ------------------------------------------------------------------------------------


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (0 when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def database_backend_pids(database: str) -> list[int]:
    """PostgreSQL backends connected to ``database`` (their process titles name it)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").split()
        except OSError:
            continue
        if len(title) > 3 and title[0] == "postgres:" and database in title[2:4]:
            pids.append(int(entry.name))
    return pids


@dataclass
class CpuSnapshot:
    server: float
    database: float
    client: float
    at: float

    @classmethod
    def take(cls, pids: list[int], database: str | None) -> CpuSnapshot:
        db = sum(process_cpu_seconds(pid) for pid in database_backend_pids(database)) if database else 0.0
        times = os.times()
        return cls(
            server=sum(process_cpu_seconds(pid) for pid in pids),
            database=db,
            client=times.user + times.system,
            at=time.perf_counter(),
        )


# ---- closed loop ---------------------------------------------------------------------------------------


@dataclass
class Phase:
    latencies_ns: list[int] = field(default_factory=list)
    errors: int = 0


@dataclass
class LoopState:
    phases: list[Phase]
    current: int = 0
    stop: bool = False
    first_error: str | None = None
    body_bytes: int = 0

    def record(self, latency_ns: int | None, error: str | None = None) -> None:
        phase = self.phases[self.current]
        if error is None and latency_ns is not None:
            phase.latencies_ns.append(latency_ns)
        else:
            phase.errors += 1
            if self.first_error is None:
                self.first_error = error


def looks_ok(status: int, body: bytes) -> bool:
    # Cheap checks keep the client's CPU per request low; set-up requests are parsed fully.
    return status == 200 and b'"result"' in body and b'"isError":true' not in body


async def request_worker(state: LoopState, target: Target, era: str, op: JSONObject) -> None:
    session = await McpSession.open(target, era)
    prepared: Prepared = session.prepare(op["method"], op.get("params"))
    try:
        while not state.stop:
            started = time.perf_counter_ns()
            try:
                response = await session.connection.request(prepared.render(next_id()))
            except Exception as exc:
                state.record(None, f"{type(exc).__name__}: {exc}")
                session.close()
                session = await McpSession.open(target, era)
                prepared = session.prepare(op["method"], op.get("params"))
                continue
            elapsed = time.perf_counter_ns() - started
            if looks_ok(response.status, response.body):
                state.record(elapsed)
                state.body_bytes = len(response.body)
            else:
                state.record(None, f"HTTP {response.status}: {response.body[:200]!r}")
    finally:
        await end_quietly(session)


async def end_quietly(session: McpSession) -> None:
    """End a handshake session (so neither server keeps it) and close the connection; failures do not matter."""
    if session.session_id is not None and not session.connection.closed:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(session.end(), 5.0)
    session.close()


async def handshake_worker(state: LoopState, target: Target, era: str, op: JSONObject) -> None:
    """initialize + notifications/initialized (timed), then DELETE so neither server piles up sessions."""
    session = await McpSession.open(target, HANDSHAKE, handshake=False)
    try:
        while not state.stop:
            started = time.perf_counter_ns()
            try:
                await session.initialize()
                elapsed = time.perf_counter_ns() - started
                await session.end()
            except Exception as exc:
                state.record(None, f"{type(exc).__name__}: {exc}")
                session.close()
                session = await McpSession.open(target, HANDSHAKE, handshake=False)
                continue
            state.record(elapsed)
    finally:
        session.close()


WORKERS = {"request": request_worker, "handshake": handshake_worker}


async def closed_loop(job: JSONObject) -> JSONObject:
    targets = [Target(**t) for t in job["targets"]]
    windows = int(job["windows"])
    state = LoopState(phases=[Phase() for _ in range(windows + 1)])
    worker = WORKERS[job["op"]["type"]]
    tasks = [
        asyncio.create_task(worker(state, targets[i % len(targets)], job["era"], job["op"]))
        for i in range(int(job["concurrency"]))
    ]
    pids = [int(p) for p in job.get("watch_pids", [])]
    database = job.get("watch_database")
    snapshots: list[CpuSnapshot] = []

    async def phases() -> None:
        await asyncio.sleep(float(job["warmup"]))
        for index in range(1, windows + 1):
            state.current = index
            snapshots.append(CpuSnapshot.take(pids, database))
            await asyncio.sleep(float(job["window"]))
        snapshots.append(CpuSnapshot.take(pids, database))
        state.stop = True

    timer = asyncio.create_task(phases())
    # A worker that fails to start (connection refused, set-up error) ends the job at once.
    waiting: set[asyncio.Task[None]] = {timer, *tasks}
    failed = None
    while failed is None and not timer.done():
        done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        failed = next((t for t in done if t is not timer and t.exception() is not None), None)
    state.stop = True
    drain_timeout = float(job.get("drain_timeout", 10.0))
    _, pending = await asyncio.wait(tasks, timeout=drain_timeout)
    for task in pending:
        task.cancel()
    if failed is not None:
        timer.cancel()
        return {"error": f"worker failed: {failed.exception()!r}"}
    results = []
    for index in range(1, windows + 1):
        phase = state.phases[index]
        before, after = snapshots[index - 1], snapshots[index]
        seconds = after.at - before.at
        count = len(phase.latencies_ns)
        window: JSONObject = {
            "seconds": round(seconds, 3),
            "count": count,
            "errors": phase.errors,
            "rps": count / seconds if seconds else 0.0,
            **summarize(phase.latencies_ns),
            "client_cpu_util": (after.client - before.client) / seconds if seconds else 0.0,
        }
        if count:
            window["server_cpu_us"] = (after.server - before.server) * 1e6 / count
            if database:
                window["db_cpu_us"] = (after.database - before.database) * 1e6 / count
        results.append(window)
    return {
        "windows": results,
        "warmup_count": len(state.phases[0].latencies_ns),
        "body_bytes": state.body_bytes,
        "unfinished_workers": len(pending),
        "first_error": state.first_error,
    }


# ---- progress latency ----------------------------------------------------------------------------------


class ProgressReader:
    """Parses an SSE body as it arrives and timestamps each progress notification on receipt."""

    def __init__(self) -> None:
        self.buffer = b""
        self.latencies_ns: list[int] = []

    def feed(self, chunk: bytes) -> None:
        received = time.time_ns()
        self.buffer += chunk.replace(b"\r\n", b"\n")
        *events, self.buffer = self.buffer.split(b"\n\n")
        for event in events:
            for line in event.split(b"\n"):
                data = line[5:].strip()
                if not line.startswith(b"data:") or not data:
                    continue  # comments, ids, and priming events (empty data)
                message = json.loads(data)
                if message.get("method") == "notifications/progress":
                    self.latencies_ns.append(received - int(message["params"]["message"]))


async def progress(job: JSONObject) -> JSONObject:
    target = Target(**job["target"])
    session = await McpSession.open(target, job["era"])
    latencies: list[int] = []
    errors = 0
    first_error = None
    arguments = {"steps": int(job["steps"]), "interval_ms": int(job["interval_ms"])}
    try:
        for call in range(int(job["calls"])):
            prepared = session.prepare(
                "tools/call", {"name": job["tool"], "arguments": arguments}, progress_token=f"bench-{call}"
            )
            reader = ProgressReader()
            try:
                response = await asyncio.wait_for(
                    session.connection.request(prepared.render(next_id()), reader.feed), float(job["timeout"])
                )
                result_of(response)
            except (McpFailure, TimeoutError, OSError) as exc:
                errors += 1
                first_error = first_error or f"{type(exc).__name__}: {exc}"
                continue
            latencies += reader.latencies_ns
    finally:
        session.close()
    expected = int(job["calls"]) * int(job["steps"])
    return {"expected": expected, "errors": errors, "first_error": first_error, **summarize(latencies)}


# ---- sessions and streams held open (memory) -----------------------------------------------------------


async def bounded(count: int, concurrency: int, factory: Any) -> list[Any]:
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> Any:
        async with gate:
            return await factory(index)

    return await asyncio.gather(*(one(i) for i in range(count)))


async def sessions(job: JSONObject) -> JSONObject:
    target = Target(**job["target"])
    started = time.perf_counter()

    async def open_one(_: int) -> str:
        session = await McpSession.open(target, HANDSHAKE)
        session.close()
        assert session.session_id is not None
        return session.session_id

    ids = await bounded(int(job["count"]), int(job.get("concurrency", 16)), open_one)
    return {"opened": len(set(ids)), "seconds": round(time.perf_counter() - started, 3)}


async def wait_for_line() -> None:
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


def say(message: JSONObject) -> None:
    print(json.dumps(message), flush=True)


async def streams(job: JSONObject) -> JSONObject:
    """Open ``count`` sessions (handshake era) or connections, say ``{"stage": "opened"}`` and wait for a line;
    then open one SSE stream on each, say ``{"stage": "streaming"}``, hold them until the next line.
    ``warmup`` streams are opened and closed before anything is counted.
    """
    target = Target(**job["target"])
    era = job["era"]
    concurrency = int(job.get("concurrency", 16))
    timeout = float(job.get("timeout", 30))

    async def stream(session: McpSession) -> int:
        if era == HANDSHAKE:
            data = session.stream_request()
        else:
            data = session.prepare("subscriptions/listen", {"notifications": {"toolsListChanged": True}}).render(
                next_id()
            )
        # Closing the stream at release fails this future; nobody needs that outcome.
        session.connection.request(data).add_done_callback(lambda f: f.cancelled() or f.exception())
        head = await asyncio.wait_for(session.connection.head(), timeout)
        return head.status

    # A few streams opened and closed first: what the first streams allocate once stays out of the per-stream cost.
    warm = await bounded(int(job.get("warmup", 20)), concurrency, lambda _: McpSession.open(target, era))
    await bounded(len(warm), concurrency, lambda i: stream(warm[i]))
    for session in warm:
        session.close()
    held: list[McpSession] = await bounded(int(job["count"]), concurrency, lambda _: McpSession.open(target, era))
    say({"stage": "opened", "count": len(held)})
    await wait_for_line()
    statuses = await bounded(len(held), concurrency, lambda i: stream(held[i]))
    opened = sum(1 for status in statuses if status == 200)
    say({"stage": "streaming", "count": opened, "statuses": sorted(set(statuses))})
    await wait_for_line()
    alive = sum(1 for session in held if not session.connection.closed)
    for session in held:
        session.close()
    return {"opened": opened, "alive_at_release": alive}


JOBS = {"closed_loop": closed_loop, "progress": progress, "sessions": sessions, "streams": streams}


def main() -> None:
    try:
        # A faster event loop when one is installed: the less CPU the client spends, the higher its ceiling.
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    job = json.loads(sys.stdin.readline())
    if job.get("kind") not in JOBS:
        raise SystemExit(f"unknown job kind {job.get('kind')!r}")
    if job.get("era", HANDSHAKE) not in (HANDSHAKE, STATELESS):
        raise SystemExit(f"unknown era {job.get('era')!r}")
    result = asyncio.run(JOBS[job["kind"]](job))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
