"""``bench/soak``: the production topology under sustained load through ordinary faults, for ten minutes.

Two web processes, a Celery worker with beat, PostgreSQL and a Redis of the run's own. For the whole run: callers
in both eras, ``--streams`` open ``subscriptions/listen`` streams, tasks started at a steady rate and followed to
their end, a catalog change every ``--change-every`` seconds. A third of the way in Redis restarts (every key
lost); halfway every PostgreSQL connection of the platform is terminated. The run passes when no task is lost, no
stream is stuck (every stream open at a catalog change hears of it, or ends and is opened again), the callers
recover, and memory stays flat. Results go to ``bench/results/<run>-soak.{json,md}``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.http_client import HttpConnection, ProtocolError, build_request
from bench.mcp_wire import HANDSHAKE, STATELESS, McpFailure, McpSession, Target, envelope, next_id
from bench.topology import PYTHON, REPO, Cores, PrivateRedis, Process, Stack, TopologyError, base_env, rss_kb

JSONObject = dict[str, Any]
RESULTS = REPO / "bench" / "results"
TASKS_EXTENSION: JSONObject = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
TERMINAL = {"completed", "failed", "cancelled"}
# A task whose run outlives this (steps times delay plus a worker takeover and a broker restart) counts as lost.
TASK_DEADLINE_SECONDS = 120.0
# A stream that has not heard of a catalog change this long after it was committed is stuck.
NUDGE_DEADLINE_SECONDS = 30.0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--streams", type=int, default=500, help="subscriptions/listen streams held open")
    parser.add_argument("--callers", type=int, default=8, help="concurrent callers (half of them in a session)")
    parser.add_argument("--task-every", type=float, default=2.0, help="seconds between new tasks")
    parser.add_argument("--change-every", type=float, default=30.0, help="seconds between catalog changes")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
        help="the PostgreSQL server to use; the run creates and drops a database of its own there",
    )
    parser.add_argument("--server", default="", help="ASGI server of the web processes (serve's default)")
    return parser.parse_args(argv)


# ---- what the run observes -----------------------------------------------------------------------------


@dataclass
class Tally:
    """Outcomes per 10-second window, so a recovery shows as the window where errors stop."""

    started: float = field(default_factory=time.monotonic)
    windows: dict[int, Counter[str]] = field(default_factory=dict)
    first_errors: dict[str, str] = field(default_factory=dict)

    def count(self, outcome: str, detail: str = "") -> None:
        window = int((time.monotonic() - self.started) // 10)
        self.windows.setdefault(window, Counter())[outcome] += 1
        if outcome != "ok" and outcome not in self.first_errors:
            self.first_errors[outcome] = detail[:300]

    def total(self, outcome: str) -> int:
        return sum(counter[outcome] for counter in self.windows.values())

    def last_error_window(self) -> int | None:
        failing = [w for w, counter in self.windows.items() if sum(counter.values()) != counter["ok"]]
        return max(failing) if failing else None


@dataclass
class Soak:
    targets: list[Target]
    args: argparse.Namespace
    calls: Tally = field(default_factory=Tally)
    tasks: Counter[str] = field(default_factory=Counter)
    task_errors: list[str] = field(default_factory=list)
    streams_open: int = 0
    stream_reopens: int = 0
    stream_errors: Counter[str] = field(default_factory=Counter)
    # Per catalog change: when it was committed, and which streams heard of it (stream index → seconds).
    changes: list[float] = field(default_factory=list)
    heard: list[dict[int, float]] = field(default_factory=list)
    # Streams open at the moment of each change: only those are expected to hear of it.
    open_at_change: list[set[int]] = field(default_factory=list)
    live_streams: set[int] = field(default_factory=set)
    # When each stream ended (and was opened again, re-reading the catalog as a client would).
    ended_at: dict[int, list[float]] = field(default_factory=dict)
    faults: list[JSONObject] = field(default_factory=list)
    memory: list[JSONObject] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def target(self, index: int) -> Target:
        return self.targets[index % len(self.targets)]


# ---- workloads -----------------------------------------------------------------------------------------


async def caller(soak: Soak, index: int) -> None:
    """Calls ``echo`` in a loop: even callers stateless, odd ones in a handshake session (re-made on failure)."""
    era = STATELESS if index % 2 == 0 else HANDSHAKE
    session: McpSession | None = None
    while not soak.stop.is_set():
        try:
            if session is None or session.connection.closed:
                session = await asyncio.wait_for(McpSession.open(soak.target(index), era), 10)
            await asyncio.wait_for(session.call("tools/call", {"name": "echo", "arguments": {"message": "x"}}), 10)
            soak.calls.count("ok")
        except (McpFailure, ProtocolError, OSError, TimeoutError) as exc:
            soak.calls.count(type(exc).__name__, str(exc))
            if session is not None:
                session.close()
            session = None
            await asyncio.sleep(0.2)
    if session is not None:
        session.close()


async def task_runner(soak: Soak, index: int) -> None:
    """Start one ``count_slowly`` task and follow it with ``tasks/get`` until it ends or is lost."""
    session = await McpSession.open(soak.target(index), STATELESS)
    started = time.monotonic()
    try:
        arguments = {"steps": 3, "delay_ms": 300}
        created = await session.call(
            "tools/call", {"name": "count_slowly", "arguments": arguments}, capabilities=TASKS_EXTENSION
        )
        if created.get("resultType") != "task":
            soak.tasks["not a task"] += 1
            return
        soak.tasks["created"] += 1
        task_id = created["taskId"]
        while time.monotonic() - started < TASK_DEADLINE_SECONDS:
            await asyncio.sleep(1.0)
            try:
                if session.connection.closed:
                    session = await McpSession.open(soak.target(index + 1), STATELESS)
                task = await session.call("tasks/get", {"taskId": task_id}, capabilities=TASKS_EXTENSION)
            except (McpFailure, ProtocolError, OSError) as exc:
                soak.tasks["poll errors"] += 1
                session.close()
                if len(soak.task_errors) < 5:
                    soak.task_errors.append(f"poll: {exc}"[:300])
                continue
            if task.get("status") in TERMINAL:
                soak.tasks[str(task["status"])] += 1
                return
        soak.tasks["lost"] += 1
        soak.task_errors.append(f"task {task_id[:8]}… not finished after {TASK_DEADLINE_SECONDS:.0f} s")
    except (McpFailure, ProtocolError, OSError) as exc:
        # Refused at creation (say, while the broker restarts): a clean error, not a lost task.
        soak.tasks["refused"] += 1
        if len(soak.task_errors) < 5:
            soak.task_errors.append(f"create: {exc}"[:300])
    finally:
        session.close()


async def tasks_loop(soak: Soak) -> None:
    running: set[asyncio.Task[None]] = set()
    index = 0
    while not soak.stop.is_set():
        task = asyncio.create_task(task_runner(soak, index))
        running.add(task)
        task.add_done_callback(running.discard)
        index += 1
        await sleep_unless_stopped(soak, soak.args.task_every)
    if running:
        await asyncio.gather(*running, return_exceptions=True)


class ListenReader:
    """Parses one listen stream's SSE body as it arrives and records when it hears of each catalog change."""

    def __init__(self, soak: Soak, index: int) -> None:
        self.soak = soak
        self.index = index
        self.buffer = b""
        self.acknowledged = asyncio.get_running_loop().create_future()

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk.replace(b"\r\n", b"\n")
        *events, self.buffer = self.buffer.split(b"\n\n")
        for event in events:
            for line in event.split(b"\n"):
                if not line.startswith(b"data:") or not line[5:].strip():
                    continue
                method = json.loads(line[5:]).get("method")
                if method == "notifications/subscriptions/acknowledged" and not self.acknowledged.done():
                    self.acknowledged.set_result(None)
                elif method == "notifications/tools/list_changed":
                    now = time.monotonic()
                    for change, heard in zip(self.soak.changes, self.soak.heard, strict=True):
                        if change <= now <= change + NUDGE_DEADLINE_SECONDS:
                            heard.setdefault(self.index, now - change)


async def listener(soak: Soak, index: int) -> None:
    """Holds one ``subscriptions/listen`` stream open, opening it again whenever it ends."""
    target = soak.target(index)
    headers, rest = envelope(STATELESS, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    while not soak.stop.is_set():
        reader = ListenReader(soak, index)
        connection: HttpConnection | None = None
        try:
            connection = await asyncio.wait_for(HttpConnection.open(target.host, target.port), 10)
            body = json.dumps({"jsonrpc": "2.0", "id": next_id(), **json.loads(rest)}).encode()
            ended = connection.request(build_request("POST", target.authority, target.path, headers, body), reader.feed)
            # Closing the stream at the end fails this future; that is how every stream ends, not news.
            ended.add_done_callback(lambda done: done.cancelled() or done.exception())
            await asyncio.wait_for(asyncio.shield(reader.acknowledged), 30)
            soak.live_streams.add(index)
            stop: asyncio.Future[Any] = asyncio.ensure_future(soak.stop.wait())
            waited: set[asyncio.Future[Any]] = {ended, stop}
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if ended.done():
                ended.exception()  # consumed: the stream ended, it is opened again below
                soak.stream_reopens += 1
        except (ProtocolError, OSError, TimeoutError) as exc:
            soak.stream_errors[type(exc).__name__] += 1
            await asyncio.sleep(0.5)
        finally:
            if index in soak.live_streams:
                soak.ended_at.setdefault(index, []).append(time.monotonic())
            soak.live_streams.discard(index)
            if connection is not None:
                connection.close()


async def sleep_unless_stopped(soak: Soak, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(soak.stop.wait(), seconds)


# ---- the run -------------------------------------------------------------------------------------------


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.log_dir = Path(tempfile.mkdtemp(prefix="mcp-soak-"))
        self.redis = PrivateRedis(self.log_dir)
        admin = urlsplit(args.database_url)
        self.database_name = f"mcp_soak_{secrets.token_hex(4)}"
        self.admin_url = urlunsplit(admin._replace(path="/postgres"))
        self.database_url = urlunsplit(admin._replace(path=f"/{self.database_name}"))
        self.env = {
            **base_env(),
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis.url(),
            "SECRET_KEY": secrets.token_urlsafe(32),
            "MCP_VAR_DIR": str(self.log_dir / "var"),
        }
        self.stack = Stack(Cores((), ()), self.log_dir, self.env, via_serve=True)
        self.web: list[Process] = []
        self.worker: Process | None = None

    def manage(self, *args: str) -> None:
        done = subprocess.run(
            [PYTHON, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise TopologyError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")

    def set_up(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{self.database_name}"')
        self.redis.start()
        self.manage("migrate", "--noinput", "-v", "0")
        self.manage("load_demo_tenant")
        self.worker = self.stack.start_worker("--beat", "--schedule", str(self.log_dir / "beat-schedule"))
        server = self.args.server or "uvicorn"
        self.web = [self.stack.start_web(server, f"web-{i}") for i in range(2)]

    def tear_down(self) -> None:
        import psycopg

        self.stack.stop_all()
        self.redis.stop()
        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{self.database_name}" WITH (FORCE)')

    def terminate_database_connections(self) -> int:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            rows = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (self.database_name,),
            ).fetchall()
        return sum(1 for (ended,) in rows if ended)

    def memory_sample(self, elapsed: float) -> JSONObject:
        sample: JSONObject = {"t": round(elapsed)}
        for process in [*self.web, *([self.worker] if self.worker else [])]:
            sample[process.name] = rss_kb(process.pid) if process.alive() else None
        return sample

    async def catalog_change(self, soak: Soak, number: int) -> None:
        """Create a tool through the services in another process. The change counts from before that process
        starts: its notification can arrive before the process has exited."""
        statement = (
            "from tenants import services; from tenants.models import Tenant; "
            "services.tool_create(tenant=Tenant.objects.get(slug='demo'), "
            f"name='soak_{number:03d}', description='soak', config={{'content': []}})"
        )
        soak.open_at_change.append(set(soak.live_streams))
        soak.heard.append({})
        soak.changes.append(time.monotonic())
        done = await asyncio.create_subprocess_exec(
            PYTHON, "manage.py", "shell", "-c", statement, cwd=REPO, env=self.env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, stderr = await done.communicate()
        if done.returncode != 0:
            del soak.open_at_change[-1], soak.heard[-1], soak.changes[-1]
            soak.faults.append({"t": "change", "error": stderr.decode(errors="replace")[-300:]})

    async def soak(self) -> Soak:
        targets = []
        for process in self.web:
            assert process.port is not None
            targets.append(Target("127.0.0.1", process.port, "/t/demo/mcp"))
        soak = Soak(targets, self.args)
        duration = self.args.minutes * 60
        started = time.monotonic()
        workers = [asyncio.create_task(caller(soak, i)) for i in range(self.args.callers)]
        workers.append(asyncio.create_task(tasks_loop(soak)))
        for index in range(self.args.streams):
            workers.append(asyncio.create_task(listener(soak, index)))
            if index % 50 == 49:
                await asyncio.sleep(0.2)  # no thundering herd at start-up
        faults = [(duration / 3, "redis restart"), (duration / 2, "database connections terminated")]
        next_change = started + self.args.change_every
        next_sample = started
        changes = 0
        while (elapsed := time.monotonic() - started) < duration:
            if faults and elapsed >= faults[0][0]:
                _, fault = faults.pop(0)
                if fault == "redis restart":
                    await asyncio.to_thread(self.redis.restart)
                    soak.faults.append({"t": round(elapsed), "fault": fault})
                else:
                    ended = await asyncio.to_thread(self.terminate_database_connections)
                    soak.faults.append({"t": round(elapsed), "fault": fault, "connections": ended})
            if time.monotonic() >= next_change:
                changes += 1
                await self.catalog_change(soak, changes)
                next_change += self.args.change_every
            if time.monotonic() >= next_sample:
                soak.memory.append(self.memory_sample(elapsed))
                next_sample += 10
            await asyncio.sleep(1.0)
        # The last change gets its full deadline before the streams close.
        await asyncio.sleep(min(NUDGE_DEADLINE_SECONDS, self.args.change_every))
        soak.stop.set()
        await asyncio.gather(*workers, return_exceptions=True)
        return soak


# ---- verdict and report --------------------------------------------------------------------------------


def memory_growth(samples: list[JSONObject], name: str) -> JSONObject:
    """RSS of ``name`` in the second third of the run against the last third (the first third warms up)."""
    values = [s[name] for s in samples if s.get(name)]
    third = len(values) // 3
    if third == 0:
        return {"samples": len(values)}
    middle, last = statistics.median(values[third : 2 * third]), statistics.median(values[2 * third :])
    return {"middle_kib": middle, "last_kib": last, "growth": round(last / middle - 1, 3)}


def verdict(soak: Soak, run: Run) -> JSONObject:
    stuck: list[JSONObject] = []
    changes = zip(soak.changes, soak.open_at_change, soak.heard, strict=True)
    for number, (at, expected, heard) in enumerate(changes, start=1):
        late = [i for i in expected if i not in heard]
        # A stream that ended before the deadline was opened again, and a new stream re-reads: not stuck.
        missing = [
            i for i in late if not any(at <= end <= at + NUDGE_DEADLINE_SECONDS for end in soak.ended_at.get(i, []))
        ]
        if missing:
            stuck.append({"change": number, "streams_missing": len(missing), "expected": len(expected)})
    delays = [d for heard in soak.heard for d in heard.values()]
    names = [p.name for p in run.web] + ([run.worker.name] if run.worker else [])
    memory = {name: memory_growth(soak.memory, name) for name in names}
    failures = []
    if soak.tasks["lost"]:
        failures.append(f"{soak.tasks['lost']} task(s) lost")
    if stuck:
        failures.append(f"{len(stuck)} catalog change(s) missed by open streams")
    for name, figures in memory.items():
        if figures.get("growth", 0) > 0.10:
            failures.append(f"{name} grew {figures['growth']:.0%} in the last third")
    last_error = soak.calls.last_error_window()
    if last_error is not None and last_error * 10 >= run.args.minutes * 60 - 60:
        failures.append(f"calls still failing in the last minute (window {last_error})")
    return {
        "calls": {
            "ok": soak.calls.total("ok"),
            "errors": {k: v for w in soak.calls.windows.values() for k, v in w.items() if k != "ok"},
            "first_errors": soak.calls.first_errors,
            "last_error_window_s": None if last_error is None else last_error * 10,
        },
        "tasks": dict(soak.tasks),
        "task_errors": soak.task_errors,
        "streams": {
            "requested": run.args.streams,
            "reopened": soak.stream_reopens,
            "open_errors": dict(soak.stream_errors),
            "changes": len(soak.changes),
            "stuck": stuck,
            "delay_s_median": round(statistics.median(delays), 3) if delays else None,
            "delay_s_max": round(max(delays), 3) if delays else None,
        },
        "faults": soak.faults,
        "memory": memory,
        "memory_samples": soak.memory,
        "processes_alive": {p.name: p.alive() for p in [*run.web, *([run.worker] if run.worker else [])]},
        "failures": failures,
    }


def render(results: JSONObject) -> str:
    calls, tasks, streams = results["calls"], results["tasks"], results["streams"]
    faults = ", ".join(f"{f.get('fault', '?')} at {f['t']} s" for f in results["faults"])
    lines = [
        f"# Soak {results['run_id']}",
        "",
        f"{results['minutes']} min, {streams['requested']} listen streams, {results['callers']} callers, "
        f"faults: {faults}.",
        "",
        f"- calls: {calls['ok']} ok, errors {calls['errors'] or 'none'}; last failing window at "
        f"{calls['last_error_window_s']} s",
        f"- tasks: {tasks}",
        f"- streams: {streams['changes']} catalog changes, median delay {streams['delay_s_median']} s, max "
        f"{streams['delay_s_max']} s; reopened {streams['reopened']}; stuck: {streams['stuck'] or 'none'}",
        "- memory (RSS, second third → last third): "
        + "; ".join(f"{n} {m.get('middle_kib')} → {m.get('last_kib')} KiB" for n, m in results["memory"].items()),
        f"- verdict: {'PASS' if not results['failures'] else 'FAIL: ' + '; '.join(results['failures'])}",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run = Run(args)
    started = datetime.now(UTC)
    print(f"soak: {args.minutes} min, logs in {run.log_dir}", flush=True)
    try:
        run.set_up()
        soak = asyncio.run(run.soak())
        results: JSONObject = {
            "run_id": started.strftime("%Y-%m-%d-%H%M") + "-soak",
            "minutes": args.minutes,
            "callers": args.callers,
            **verdict(soak, run),
        }
    except TopologyError as exc:
        print(f"soak failed to start: {exc}", file=sys.stderr)
        return 2
    finally:
        run.tear_down()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{results['run_id']}.json").write_text(json.dumps(results, indent=1) + "\n")
    markdown = render(results)
    (RESULTS / f"{results['run_id']}.md").write_text(markdown)
    print(markdown)
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
