"""``bench/multi-host``: the platform on hosts with a network between them (``tests/e2e/hosts.py``: two web hosts,
a worker host and a data host in network namespaces), with PostgreSQL 0, 1 and 5 ms of round trip away. Per era
and case: req/s and latency, and per request the database statements, the Redis commands and the CPU spent in the
web processes, PostgreSQL and Redis: the figures behind the capacity table in docs/performance.md.

The load generator (``bench.loadgen``, closed loop) spreads its connections over both web hosts. Statements are
counted by the data host's relay as they cross it (per client address: the web hosts' alone are the requests'),
Redis commands by ``INFO commandstats`` of the topology's own Redis (reset before each point), CPU from ``/proc``
over the whole point (warm-up included, at the same load); what the topology does with no request arriving (the
worker's and beat's polling, the web processes' checks), measured for two seconds before each point, is taken
out. Nothing is pinned: the load generator, the servers, PostgreSQL, Redis and the relay share the machine's
cores, so read req/s as relative between the round trips, and CPU per request as the steady figure.

Needs root (network namespaces), PostgreSQL (``--database-url``) and ``redis-server``. About three minutes; writes
``bench/results/<date>-<time>-multi-host.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.loadgen import database_backend_pids, process_cpu_seconds
from bench.mcp_wire import HANDSHAKE, STATELESS
from bench.stats import spread
from bench.topology import PYTHON, REPO, descendants

JSONObject = dict[str, Any]
RESULTS = REPO / "bench" / "results"
ROUND_TRIPS_MS = (0.0, 1.0, 5.0)
TENANT_PATH = "/t/demo/mcp"
ADD: JSONObject = {"type": "request", "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}
# Commands the harness itself sends Redis around each point.
OWN_REDIS_COMMANDS = ("config|resetstat", "info", "config")
# How long each point first watches the topology with no request arriving (its background work).
IDLE_SECONDS = 2.0


@dataclass(frozen=True)
class Case:
    era: str
    label: str
    op: JSONObject


CASES = (
    Case(STATELESS, "tools/call add", ADD),
    Case(HANDSHAKE, "tools/call add", ADD),
    Case(HANDSHAKE, "initialize + DELETE", {"type": "handshake"}),
)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/multi-host", description=__doc__)
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
        help="the PostgreSQL server to use; the run creates and drops databases of its own there",
    )
    parser.add_argument("--concurrency", type=int, default=16, help="connections, spread over the two web hosts")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--windows", type=int, default=3)
    parser.add_argument("--window", type=float, default=3.0)
    parser.add_argument("--note", default="", help="why this run (written into the report)")
    return parser.parse_args(argv)


class Machine:
    """CPU seconds of the topology's processes by pid, read from ``/proc``."""

    def __init__(self, hosts: Any) -> None:
        self.hosts = hosts

    def _tree(self, name: str) -> list[int]:
        process = next(p for p in self.hosts.processes if p.name == name)
        return descendants(process.popen.pid)

    def cpu(self) -> dict[str, dict[int, float]]:
        groups = {
            "web": [pid for name in ("web-a", "web-b") for pid in self._tree(name)],
            "worker": self._tree("worker"),
            "postgresql": database_backend_pids(self.hosts.database_name),
            "redis": self._tree("redis"),
            "relay": self._tree("delay-relay"),
        }
        return {group: {pid: process_cpu_seconds(pid) for pid in pids} for group, pids in groups.items()}

    @staticmethod
    def spent(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> dict[str, float]:
        """CPU seconds each group spent between two readings: processes that started meanwhile (new database
        connections) count whole; one that ended meanwhile loses its last slice."""
        return {
            group: sum(seconds - before[group].get(pid, 0.0) for pid, seconds in pids.items())
            for group, pids in after.items()
        }


@dataclass(frozen=True)
class Tally:
    """Statements the web hosts and the worker sent, and Redis commands, from a start (``at``)."""

    web_statements: int
    worker_statements: int
    redis_commands: dict[str, int]
    at: float

    @classmethod
    def since_reset(cls, hosts: Any, redis: Any) -> Tally:
        counts = hosts.relay.counts()
        web = {hosts.web(index).address for index in range(2)}
        return cls(
            web_statements=sum(counts[a].statements for a in web if a in counts),
            worker_statements=counts[hosts.worker.address].statements if hosts.worker.address in counts else 0,
            redis_commands=redis_commands(redis),
            at=time.monotonic(),
        )


@dataclass(frozen=True)
class Background:
    """What the topology does per second with no request arriving (polling, sweeps, checks, keep-alives): taken
    out of the per-request figures."""

    web_statements: float
    worker_statements: float
    redis_commands: float
    cpu: dict[str, float]

    @classmethod
    def measure(cls, hosts: Any, redis: Any, machine: Machine) -> Background:
        redis.config_resetstat()
        start, cpu_start = Tally.since_reset(hosts, redis), machine.cpu()
        time.sleep(IDLE_SECONDS)
        end, cpu_end = Tally.since_reset(hosts, redis), machine.cpu()
        seconds = end.at - start.at
        return cls(
            web_statements=(end.web_statements - start.web_statements) / seconds,
            worker_statements=(end.worker_statements - start.worker_statements) / seconds,
            redis_commands=sum(end.redis_commands.values()) / seconds,
            cpu={group: spent / seconds for group, spent in Machine.spent(cpu_start, cpu_end).items()},
        )


def redis_commands(client: Any) -> dict[str, int]:
    stats = client.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): int(entry["calls"]) for name, entry in stats.items()}
    return {name: count for name, count in calls.items() if name not in OWN_REDIS_COMMANDS}


def loadgen(job: JSONObject, timeout: float) -> JSONObject:
    done = subprocess.run(
        [PYTHON, "-m", "bench.loadgen"],
        input=json.dumps(job) + "\n",
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the load generator failed ({done.returncode}): {done.stderr[-2000:]}")
    result: JSONObject = json.loads(lines[-1])
    if "error" in result:
        raise RuntimeError(f"the load generator failed: {result['error']}")
    return result


def measure(hosts: Any, redis: Any, case: Case, round_trip: float, args: argparse.Namespace) -> JSONObject:
    """One point: ``case`` at ``round_trip`` ms to PostgreSQL."""
    hosts.set_database_round_trip(round_trip)
    measured = hosts.database_round_trip()
    machine = Machine(hosts)
    idle = Background.measure(hosts, redis, machine)
    web_addresses = sorted(hosts.web(index).address for index in range(2))
    job = {
        "kind": "closed_loop",
        "targets": [{"host": address, "port": 8000, "path": TENANT_PATH} for address in web_addresses],
        "era": case.era,
        "op": case.op,
        "concurrency": args.concurrency,
        "warmup": args.warmup,
        "windows": args.windows,
        "window": args.window,
    }
    redis.config_resetstat()
    before, cpu_before = Tally.since_reset(hosts, redis), machine.cpu()
    result = loadgen(job, args.warmup + args.windows * args.window + 60)
    after, cpu_after = Tally.since_reset(hosts, redis), machine.cpu()
    seconds = after.at - before.at
    requests = int(result["warmup_count"]) + sum(int(window["count"]) for window in result["windows"])
    counts = hosts.relay.counts()
    windows = result["windows"]

    def per_request(total: float, idle_rate: float) -> float:
        return max(0.0, total - idle_rate * seconds) / requests

    cpu = Machine.spent(cpu_before, cpu_after)
    return {
        "era": case.era,
        "case": case.label,
        "round_trip_ms": round_trip,
        "select_1_ms": round(measured * 1000, 3),
        "concurrency": args.concurrency,
        "requests": requests,
        "seconds": round(seconds, 2),
        "errors": sum(window["errors"] for window in windows),
        "first_error": result["first_error"],
        "rps": spread([window["rps"] for window in windows]),
        "p50_ms": spread([(window["p50_us"] or 0) / 1000 for window in windows]),
        "p99_ms": spread([(window["p99_us"] or 0) / 1000 for window in windows]),
        "statements_per_request": per_request(after.web_statements - before.web_statements, idle.web_statements),
        "worker_statements_per_request": per_request(
            after.worker_statements - before.worker_statements, idle.worker_statements
        ),
        "redis_commands_per_request": per_request(sum(after.redis_commands.values()), idle.redis_commands),
        "background_per_second": asdict(idle),
        "redis_commands": dict(sorted(after.redis_commands.items(), key=lambda item: -item[1])[:6]),
        "database_connections_open": {
            "web": sum(counts[a].open for a in web_addresses if a in counts),
            "worker": counts[hosts.worker.address].open if hosts.worker.address in counts else 0,
        },
        "cpu_us_per_request": {name: per_request(spent, idle.cpu[name]) * 1e6 for name, spent in cpu.items()},
    }


def render(results: JSONObject) -> str:
    lines = [
        f"# Multi-host run {results['run_id']}",
        "",
        f"- {results['started']}, {results['minutes']:.1f} min; c={results['concurrency']} over two web hosts; "
        f"{results['windows']} windows x {results['window']:g} s after {results['warmup']:g} s of warm-up",
        f"- machine: {os.cpu_count()} cores, nothing pinned; base round trip through the relay: "
        f"{results['base_round_trip_ms']:.2f} ms",
    ]
    if results.get("note"):
        lines.append(f"- note: {results['note']}")
    lines += [
        "",
        "| era | case | DB round trip ms (SELECT 1) | req/s | p50 ms | p99 ms | statements/req | Redis commands/req "
        "| web CPU µs/req | PostgreSQL CPU µs/req | Redis CPU µs/req | DB connections (web + worker) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in results["points"]:
        cpu = row["cpu_us_per_request"]
        lines.append(
            f"| {row['era']} | {row['case']} | {row['round_trip_ms']:g} ({row['select_1_ms']:.2f}) "
            f"| {row['rps']['median']:,.0f} ({row['rps']['min']:,.0f}-{row['rps']['max']:,.0f}) "
            f"| {row['p50_ms']['median']:.2f} | {row['p99_ms']['median']:.2f} "
            f"| {row['statements_per_request']:.2f} | {row['redis_commands_per_request']:.2f} "
            f"| {cpu['web']:.0f} | {cpu['postgresql']:.0f} | {cpu['redis']:.0f} "
            f"| {row['database_connections_open']['web']} + {row['database_connections_open']['worker']} |"
        )
    lines += [
        "",
        "Statements, Redis commands and CPU per request leave out what the topology does with no request arriving "
        "(measured for 2 s before each point and subtracted).",
        "",
        "Redis commands by name (the most frequent, whole point, background included):",
        "",
    ]
    for row in results["points"]:
        named = ", ".join(f"{name} {count:,}" for name, count in row["redis_commands"].items())
        lines.append(f"- {row['era']} {row['case']} at {row['round_trip_ms']:g} ms: {named}")
    errors = [row for row in results["points"] if row["errors"]]
    for row in errors:
        lines.append(f"- errors: {row['era']} {row['case']}: {row['errors']} ({row['first_error']})")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from tests.e2e import netns

    reason = netns.unavailable()
    if reason is not None:
        print(f"bench/multi-host cannot run here: {reason}", file=sys.stderr)
        return 2
    os.environ["DATABASE_URL"] = args.database_url
    from redis import Redis

    from tests.e2e.hosts import start_hosts

    started = datetime.now(UTC)
    clock = time.monotonic()
    points = []
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="mcp-multi-host-") as tmp:
        print("starting the hosts", flush=True)
        hosts = start_hosts(stack, Path(tmp), args.database_url)
        redis = Redis.from_url(hosts.redis_url())
        stack.callback(redis.close)
        base = hosts.database_round_trip()
        for round_trip in ROUND_TRIPS_MS:
            for case in CASES:
                point = measure(hosts, redis, case, round_trip, args)
                points.append(point)
                print(
                    f"[{time.monotonic() - clock:5.0f} s] {case.era:9} {case.label:20} {round_trip:g} ms: "
                    f"{point['rps']['median']:,.0f} req/s, p99 {point['p99_ms']['median']:.2f} ms, "
                    f"{point['statements_per_request']:.2f} statements/req",
                    flush=True,
                )
    results: JSONObject = {
        "run_id": started.strftime("%Y-%m-%d-%H%M") + "-multi-host",
        "started": started.isoformat(timespec="seconds"),
        "minutes": (time.monotonic() - clock) / 60,
        "concurrency": args.concurrency,
        "warmup": args.warmup,
        "windows": args.windows,
        "window": args.window,
        "note": args.note,
        "base_round_trip_ms": base * 1000,
        "points": points,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{results['run_id']}.json").write_text(json.dumps(results, indent=1) + "\n")
    markdown = render(results)
    (RESULTS / f"{results['run_id']}.md").write_text(markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
