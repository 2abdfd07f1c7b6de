"""``bench/run [--quick]``: start everything, run every workload, write bench/results/ and docs/performance.md.

Order: data and Celery worker; our platform and the SDK peer side by side on the recommended ASGI server, each
point measured on ours then on the peer (same minutes of machine noise); tools/list; progress; memory on fresh
processes; statements per request; our platform on the other ASGI servers; bare-ASGI ceilings; scaling.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench import report
from bench.checks import (
    CheckFailed,
    check_catalog,
    check_equivalent,
    endpoint_of,
    git_state,
    machine_facts,
    serve_servers,
    versions,
)
from bench.mcp_wire import ERAS, HANDSHAKE, STATELESS
from bench.pgcount import StatementCounter
from bench.profiles import FULL, PROFILES, Profile
from bench.queries import count_statements
from bench.topology import (
    REPO,
    Cores,
    PrivateRedis,
    Process,
    Stack,
    TopologyError,
    base_env,
    installed_servers,
    prepare_database,
)
from bench.workloads import (
    CATALOG_PATH,
    DISCOVER_OP,
    HANDSHAKE_OP,
    LIST_OP,
    OURS_PATH,
    PEER_PATH,
    Bench,
    BenchError,
    Served,
    call_op,
)

JSONObject = dict[str, Any]
RESULTS = REPO / "bench" / "results"
PEER_APP = "bench.peer_server:app"
PEER_SERVER = "uvicorn"
# The activity log's cost: a process with it off and one with it on, side by side (``Profile.activity_rounds``).
ACTIVITY_STATES = (("log off", "0"), ("log on", "1"))


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="Short windows and fewer points: validates the harness.")
    parser.add_argument("--servers", help="Comma-separated ASGI servers for our platform (default: all installed).")
    parser.add_argument("--recommended", help="The ASGI server the targets are judged on (default: serve's default).")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_mcp"),
        help="PostgreSQL database to (re)create for the run; <name>_seed is kept as its template.",
    )
    parser.add_argument("--no-pin", action="store_true", help="Do not pin servers and load generator to cores.")
    parser.add_argument("--skip", default="", help="Comma-separated workloads to leave out (see --list).")
    parser.add_argument("--list", action="store_true", help="List the workloads and exit.")
    parser.add_argument("--note", default="", help="A line about the conditions, printed in the results.")
    parser.add_argument("--no-docs", action="store_true", help="Do not rewrite the summary in docs/performance.md.")
    return parser.parse_args(argv)


WORKLOADS = (
    "tools_call",
    "session_setup",
    "tools_list",
    "progress",
    "memory",
    "queries",
    "servers",
    "ceiling",
    "scaling",
    "activity_log",
)


# ---- the run -------------------------------------------------------------------------------------------


class Runner:
    def __init__(self, args: argparse.Namespace, profile: Profile) -> None:
        self.args = args
        self.profile = profile
        self.skip = {w for w in args.skip.split(",") if w}
        self.cores = Cores.detect(pin=not args.no_pin)
        self.log_dir = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
        self.database_url = args.database_url
        self.redis = PrivateRedis(self.log_dir)
        secret = secrets.token_urlsafe(32)
        env = {
            **base_env(),
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis.url(),
            "SECRET_KEY": secret,
            "MCP_VAR_DIR": str(self.log_dir / "var"),
        }
        self.serve_choices, serve_default = serve_servers(env)
        installed = installed_servers()
        wanted = args.servers.split(",") if args.servers else installed
        self.servers = [s for s in wanted if s in installed]
        if not self.servers:
            raise TopologyError(f"none of {wanted} is installed (installed: {installed})")
        if args.recommended and args.recommended not in self.servers:
            raise TopologyError(f"--recommended {args.recommended} is not among the servers measured: {self.servers}")
        preferred = args.recommended or serve_default or "uvicorn"
        self.recommended: str = preferred if preferred in self.servers else self.servers[0]
        self.servers.sort(key=lambda s: s != self.recommended)
        via_serve = bool(self.serve_choices) and all(s in self.serve_choices for s in self.servers)
        self.stack = Stack(self.cores, self.log_dir, env, via_serve)
        self.bench = Bench(profile, self.cores, self.stack, sys.stdout, urlsplit(self.database_url).path.lstrip("/"))
        self.launch: dict[str, list[str]] = {}
        self.failures: list[str] = []
        self.worker: Process | None = None

    def wants(self, workload: str) -> bool:
        return workload not in self.skip

    def web(self, server: str, name: str, env: dict[str, str] | None = None) -> Process:
        process = self.stack.start_web(server, name, env)
        self.launch.setdefault(f"ours/{server}", process.argv)
        return process

    def peer(self, name: str, **env: str) -> Process:
        process = self.stack.start_app(PEER_SERVER, PEER_APP, name, env)
        self.launch.setdefault(f"peer/{PEER_SERVER}" + (f" ({', '.join(env)})" if env else ""), process.argv)
        return process

    def run(self) -> JSONObject:
        bench, profile = self.bench, self.profile
        started = datetime.now(UTC)
        facts = machine_facts(self.cores)
        planned = profile.planned_minutes(len(self.servers))
        bench.say(
            f"{profile.name} run, planned ≈ {planned:.0f} min (no new work starts after {profile.max_minutes:.0f})"
        )
        bench.say(
            f"servers {', '.join(self.servers)} (recommended: {self.recommended}); "
            f"{self.cores.describe()}; logs in {self.log_dir}"
        )
        busy = os.getloadavg()[0]
        if busy > 0.5 * (os.cpu_count() or 1):
            bench.say(f"note: the machine is busy (load average {busy:.1f}): expect noisy req/s and p99")
        bench.say("preparing PostgreSQL and Redis")
        prepare_database(self.database_url, self.stack.platform_env, profile.catalog_tools, sys.stdout)
        self.redis.start()
        self.worker = self.stack.start_worker()
        try:
            self.phase("ours and the peer", self.main_pair)
            for workload, step in (
                ("memory", self.memory),
                ("queries", self.queries),
                ("servers", self.other_servers),
                ("ceiling", self.ceilings),
                ("scaling", self.scaling),
                ("activity_log", self.activity_log),
            ):
                if self.wants(workload):
                    self.phase(workload, step)
        finally:
            if self.worker is not None and not self.worker.alive():
                self.failures.append(f"the Celery worker exited during the run:\n{self.worker.tail()}")
            self.stack.stop_all()
            self.redis.stop()
        return {
            "run_id": started.strftime("%Y-%m-%d-%H%M") + f"-{profile.name}",
            "started": started.isoformat(timespec="seconds"),
            "minutes": round((time.monotonic() - bench.started) / 60, 1),
            "profile": profile.__dict__,
            "note": self.args.note,
            "recommended": self.recommended,
            "servers": self.servers,
            "machine": {**facts, "load_average_at_end": os.getloadavg()},
            "versions": versions(),
            "git": git_state(),
            "launch": {name: " ".join(argv) for name, argv in self.launch.items()},
            "skipped": bench.skipped,
            "failures": self.failures,
            "rows": bench.rows,
        }

    def phase(self, name: str, step: Callable[[], None]) -> None:
        """Run one part of the benchmark; a server that will not start or a failed check ends that part only."""
        try:
            step()
        except (TopologyError, BenchError, CheckFailed) as exc:
            self.failures.append(f"{name}: {exc}")
            self.bench.say(f"{name} FAILED: {exc}")
        finally:
            # Whatever the part started and did not stop (the worker stays for the whole run).
            for process in [p for p in self.stack.processes if p is not self.worker]:
                self.stack.stop(process)

    def main_pair(self) -> None:
        """Ours and the peer side by side on the recommended server: tools/call, set-up, lists, progress."""
        bench, server = self.bench, self.recommended
        ours = self.web(server, "web")
        peer = self.peer("peer")
        asyncio.run(check_equivalent(endpoint_of(ours, OURS_PATH), endpoint_of(peer, PEER_PATH)))
        pair = (Served.one("ours", server, ours, OURS_PATH), Served.one("peer", PEER_SERVER, peer, PEER_PATH))
        if self.wants("tools_call"):
            for era in ERAS:
                for tool in self.profile.tools:
                    for concurrency in self.profile.concurrencies:
                        for served in pair:
                            bench.closed_loop(
                                served,
                                workload="tools_call",
                                era=era,
                                case=tool,
                                concurrency=concurrency,
                                op=call_op(tool),
                            )
            self.wrk_checks(pair)
        if self.wants("session_setup"):
            for era, case, op in ((HANDSHAKE, "initialize", HANDSHAKE_OP), (STATELESS, "server/discover", DISCOVER_OP)):
                for served in pair:
                    concurrency = self.profile.session_concurrency
                    bench.closed_loop(
                        served, workload="session_setup", era=era, case=case, concurrency=concurrency, op=op
                    )
        if self.wants("tools_list"):
            self.tools_list(ours, peer)
        if self.wants("progress"):
            self.progress(ours)
        self.stack.stop(peer)
        self.stack.stop(ours)

    def wrk_checks(self, pair: tuple[Served, ...]) -> None:
        seconds = self.profile.windows * self.profile.window
        for served in pair:
            if self.bench.out_of_time(f"wrk check {served.system}"):
                return
            url = f"http://127.0.0.1:{served.processes[0].port}{served.path}"
            rps = self.bench.wrk(url, STATELESS, call_op("static_info"), 16, seconds)
            if rps is not None:
                self.bench.record(
                    {
                        "workload": "wrk_check",
                        "system": served.system,
                        "server": served.server,
                        "era": STATELESS,
                        "case": "static_info",
                        "concurrency": 16,
                        "wrk_rps": rps,
                    }
                )
                self.bench.say(
                    f"wrk check     {served.system}/{served.server:<8} stateless static_info c=16: {rps:.0f} req/s"
                )

    def tools_list(self, ours: Process, peer: Process) -> None:
        bench = self.bench
        asyncio.run(check_catalog(endpoint_of(ours, CATALOG_PATH), paged=True))
        windows = self.profile.list_windows
        for era in ERAS:
            served = Served.one("ours", self.recommended, ours, CATALOG_PATH)
            bench.closed_loop(
                served, workload="tools_list", era=era, case="first page", concurrency=1, op=LIST_OP, windows=windows
            )
        catalog_peer = self.peer("peer-catalog", BENCH_PEER_CATALOG_TOOLS=str(self.profile.catalog_tools))
        try:
            asyncio.run(check_catalog(endpoint_of(catalog_peer, PEER_PATH), paged=False))
            served = Served.one("peer", PEER_SERVER, catalog_peer, PEER_PATH)
            for era in ERAS:
                bench.closed_loop(
                    served,
                    workload="tools_list",
                    era=era,
                    case="all tools (no pages)",
                    concurrency=1,
                    op=LIST_OP,
                    windows=windows,
                )
        finally:
            self.stack.stop(catalog_peer)

    def progress(self, ours: Process) -> None:
        # The SDK drops notifications from JSON responses: its progress peer answers with SSE.
        sse_peer = self.peer("peer-sse", BENCH_PEER_JSON="0")
        try:
            for system, name, process, path in (
                ("ours", self.recommended, ours, OURS_PATH),
                ("peer", PEER_SERVER, sse_peer, PEER_PATH),
            ):
                for era in ERAS:
                    for interval in self.profile.progress_intervals_ms:
                        self.bench.progress(
                            system=system, server=name, process=process, path=path, era=era, interval_ms=interval
                        )
        finally:
            self.stack.stop(sse_peer)

    def memory(self) -> None:
        for system in ("ours", "peer"):
            if system == "ours":
                process, server, path = self.web(self.recommended, "web-memory"), self.recommended, OURS_PATH
            else:
                process, server, path = self.peer("peer-memory"), PEER_SERVER, PEER_PATH
            try:
                self.bench.memory(system=system, server=server, process=process, path=path)
            except BenchError as exc:
                self.bench.say(f"memory {system} FAILED: {exc}")
            finally:
                self.stack.stop(process)

    def queries(self) -> None:
        if self.bench.out_of_time("queries"):
            return
        parts = urlsplit(self.database_url)
        counter = StatementCounter(parts.hostname or "127.0.0.1", parts.port or 5432)
        port = counter.start()
        netloc = f"{parts.username or 'postgres'}{':' + parts.password if parts.password else ''}@127.0.0.1:{port}"
        env = {**self.stack.platform_env, "DATABASE_URL": urlunsplit(parts._replace(netloc=netloc))}
        process = self.web(self.recommended, "web-counted", env)
        try:
            for found in count_statements(counter, process.port or 0):
                self.bench.record(
                    {
                        "workload": "queries",
                        "system": "ours",
                        "server": self.recommended,
                        "era": found["era"],
                        "case": found["case"],
                        "queries": found,
                    }
                )
                self.bench.say(
                    f"queries       {found['era']:<9} {found['case']:<40} "
                    f"{found['statements_per_request']:.2f} statements/request "
                    f"({found['min']}-{found['max']}), {found['new_connections']} new connections"
                )
        finally:
            self.stack.stop(process)
            counter.stop()

    def other_servers(self) -> None:
        for server in self.servers:
            if server == self.recommended or self.bench.out_of_time(f"ours on {server}"):
                continue
            process = self.web(server, f"web-{server}")
            served = Served.one("ours", server, process, OURS_PATH)
            try:
                for era in ERAS:
                    for tool in self.profile.tools:
                        for concurrency in self.profile.other_concurrencies:
                            self.bench.closed_loop(
                                served,
                                workload="tools_call",
                                era=era,
                                case=tool,
                                concurrency=concurrency,
                                op=call_op(tool),
                            )
            finally:
                self.stack.stop(process)

    def ceilings(self) -> None:
        seconds = self.profile.windows * self.profile.window
        for server in self.servers:
            if self.bench.out_of_time(f"ceiling {server}"):
                continue
            process = self.stack.start_app(server, "bench.bare_app:app", f"bare-{server}")
            self.launch.setdefault(f"bare/{server}", process.argv)
            try:
                served = Served.one("bare", server, process, "/")
                row = self.bench.closed_loop(
                    served,
                    workload="ceiling",
                    era=STATELESS,
                    case="fixed JSON",
                    concurrency=16,
                    op=call_op("static_info"),
                )
                if row:
                    row["wrk_rps"] = self.bench.wrk(
                        f"http://127.0.0.1:{process.port}/", STATELESS, call_op("static_info"), 16, seconds
                    )
            finally:
                self.stack.stop(process)

    def scaling(self) -> None:
        # With fewer than 3 cores the web processes cannot each have one: run all unpinned, and say so.
        cores = self.cores if len(self.cores.server) >= 2 else Cores((), ())
        stack = Stack(cores, self.log_dir, self.stack.platform_env, self.stack.via_serve)
        for count in self.profile.scaling_processes:
            if self.bench.out_of_time(f"scaling {count}"):
                return
            processes = [stack.start_web(self.recommended, f"web-scale-{count}-{i}") for i in range(count)]
            try:
                served = Served("ours", self.recommended, tuple(processes), OURS_PATH)
                row = self.bench.closed_loop(
                    served,
                    workload="scaling",
                    era=STATELESS,
                    case="static_info",
                    concurrency=16,
                    op=call_op("static_info"),
                    cores=cores,
                )
                if row:
                    row["pinning"] = cores.describe()
            finally:
                stack.stop_all()

    def activity_log(self) -> None:
        """Stateless and session ``tools/call`` with the activity log off and on: its cost (the target is at most
        5% fewer req/s). The two processes share the server core and are loaded at the same time, each by its own
        load generator: the scheduler gives each half the core, so each one's req/s is set by its CPU per request,
        and whatever else the machine does in those seconds falls on both alike. Measured in turn, the same
        comparison moved by ±20% from round to round on a shared machine; side by side, two identical processes
        agreed within 1%. ``Profile.activity_rounds`` rounds per era."""
        processes = []
        try:
            served = {}
            for state, flag in ACTIVITY_STATES:
                env = {**self.stack.platform_env, "MCP_ACTIVITY_LOG": flag}
                process = self.web(self.recommended, f"web-activity-{flag}", env)
                processes.append(process)
                served[state] = Served.one("ours", self.recommended, process, OURS_PATH)
            for round_ in range(1, self.profile.activity_rounds + 1):
                for era in ERAS:
                    if self.bench.out_of_time(f"activity log round {round_}"):
                        return
                    self.side_by_side(served, era, round_)
        finally:
            for process in processes:
                self.stack.stop(process)

    def side_by_side(self, served: dict[str, Served], era: str, round_: int) -> None:
        """One closed loop per process, run at the same time (each ``closed_loop`` waits for its load generator)."""
        rows: dict[str, JSONObject] = {}

        def measure(state: str) -> None:
            rows[state] = self.bench.closed_loop(
                served[state],
                workload="activity_log",
                era=era,
                case=f"static_info, {state}",
                concurrency=16,
                op=call_op("static_info"),
            )

        threads = [threading.Thread(target=measure, args=(state,)) for state, _ in ACTIVITY_STATES]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for row in rows.values():
            if row:
                row["round"] = round_
                row["side_by_side"] = True


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # A terminated run still stops every process it started (the ``finally`` blocks run on SystemExit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.list:
        print("\n".join(WORKLOADS))
        return 0
    unknown = {w for w in args.skip.split(",") if w} - set(WORKLOADS)
    if unknown:
        print(f"unknown workloads: {', '.join(sorted(unknown))} (see --list)", file=sys.stderr)
        return 2
    profile = PROFILES["quick"] if args.quick else FULL
    try:
        runner = Runner(args, profile)
    except TopologyError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    try:
        results = runner.run()
    except (TopologyError, BenchError, CheckFailed) as exc:
        print(f"bench failed: {exc}\nlogs: {runner.log_dir}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; every process started by the run was stopped", file=sys.stderr)
        return 130
    RESULTS.mkdir(parents=True, exist_ok=True)
    raw = RESULTS / f"{results['run_id']}.json"
    raw.write_text(json.dumps(results, indent=1) + "\n")
    markdown = RESULTS / f"{results['run_id']}.md"
    markdown.write_text(report.render(results))
    print(f"results: {markdown.relative_to(REPO)} (raw: {raw.relative_to(REPO)})")
    if not args.no_docs:
        docs = REPO / "docs" / "performance.md"
        report.update_docs(results, docs, os.path.relpath(markdown, docs.parent))
        print("summary: docs/performance.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
