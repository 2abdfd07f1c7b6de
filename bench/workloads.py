"""The measurements: each drives a running server through the load generator and records one result row.

A row names the workload, the system (``ours``, ``peer`` or ``bare``), the ASGI server, the protocol era and the
case, and holds the raw windows plus their median and spread. ``Bench`` carries what every workload needs.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from bench.mcp_wire import HANDSHAKE, STATELESS, envelope
from bench.profiles import Profile
from bench.stats import spread
from bench.topology import PYTHON, REPO, Cores, Process, Stack, descendants, rss_kb

JSONObject = dict[str, Any]

OURS_PATH = "/t/bench/mcp"
CATALOG_PATH = "/t/bench-catalog/mcp"
PEER_PATH = "/mcp"
TOOL_ARGUMENTS: dict[str, JSONObject] = {"static_info": {}, "echo": {"message": "hello"}}
LIST_OP: JSONObject = {"type": "request", "method": "tools/list", "params": {}}
DISCOVER_OP: JSONObject = {"type": "request", "method": "server/discover", "params": {}}
HANDSHAKE_OP: JSONObject = {"type": "handshake"}
SUMMARY_KEYS = ("rps", "p50_us", "p90_us", "p99_us", "server_cpu_us", "db_cpu_us", "client_cpu_util")
SETTLE_SECONDS = 1.0


class BenchError(Exception):
    """The load generator failed or returned something unusable."""


@dataclass(frozen=True)
class Served:
    """What a point drives: a system (``ours``, ``peer``, ``bare``) on an ASGI server, one or more processes."""

    system: str
    server: str
    processes: tuple[Process, ...]
    path: str

    @classmethod
    def one(cls, system: str, server: str, process: Process, path: str) -> Served:
        return cls(system, server, (process,), path)

    @property
    def targets(self) -> list[JSONObject]:
        return [target(process, self.path) for process in self.processes]


def call_op(tool: str) -> JSONObject:
    return {"type": "request", "method": "tools/call", "params": {"name": tool, "arguments": TOOL_ARGUMENTS[tool]}}


def target(process: Process, path: str) -> JSONObject:
    return {"host": "127.0.0.1", "port": process.port, "path": path}


def fmt_ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:.2f} ms"


@dataclass
class Bench:
    profile: Profile
    cores: Cores
    stack: Stack
    out: TextIO
    database: str
    started: float = field(default_factory=time.monotonic)
    rows: list[JSONObject] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    # ---- bookkeeping ---------------------------------------------------------------------------------------

    def elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60:02d}:{seconds % 60:02d}"

    def say(self, text: str) -> None:
        self.out.write(f"[{self.elapsed()}] {text}\n")
        self.out.flush()

    def out_of_time(self, what: str) -> bool:
        """True (and noted) once the run has used its time budget: later workloads are skipped, not cut short."""
        if time.monotonic() - self.started < self.profile.max_minutes * 60:
            return False
        self.skipped.append(what)
        self.say(f"skipped (time budget of {self.profile.max_minutes:.0f} min used): {what}")
        return True

    def record(self, row: JSONObject) -> JSONObject:
        self.rows.append(row)
        return row

    # ---- the load generator --------------------------------------------------------------------------------

    def loadgen_argv(self, cores: Cores | None = None) -> list[str]:
        return [*(cores or self.cores).prefix("load"), PYTHON, "-m", "bench.loadgen"]

    def loadgen(self, job: JSONObject, timeout: float, cores: Cores | None = None) -> JSONObject:
        try:
            done = subprocess.run(
                self.loadgen_argv(cores),
                input=json.dumps(job) + "\n",
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=REPO,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise BenchError(f"the load generator did not finish within {timeout:.0f}s") from exc
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            log = self.stack.log_dir / f"loadgen-failure-{len(self.rows)}.log"
            log.write_text(json.dumps(job) + "\n" + done.stderr)
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise BenchError(f"the load generator failed ({done.returncode}): {last} (full output: {log})")
        result: JSONObject = json.loads(lines[-1])
        return result

    # ---- closed-loop points --------------------------------------------------------------------------------

    def closed_loop(
        self,
        served: Served,
        *,
        workload: str,
        era: str,
        case: str,
        concurrency: int,
        op: JSONObject,
        windows: int | None = None,
        cores: Cores | None = None,
    ) -> JSONObject:
        windows = windows or self.profile.windows
        system, server = served.system, served.server
        label = f"{workload:<13} {system}/{server:<8} {era:<9} {case:<16} c={concurrency:<3}"
        if self.out_of_time(label):
            return {}
        job = {
            "kind": "closed_loop",
            "targets": served.targets,
            "era": era,
            "op": op,
            "concurrency": concurrency,
            "warmup": self.profile.warmup,
            "windows": windows,
            "window": self.profile.window,
            "watch_pids": [pid for process in served.processes for pid in descendants(process.pid)],
            # Our platform's cost includes PostgreSQL's work for it.
            "watch_database": self.database if system == "ours" else None,
        }
        row: JSONObject = {
            "workload": workload,
            "system": system,
            "server": server,
            "era": era,
            "case": case,
            "concurrency": concurrency,
            "processes": len(served.processes),
        }
        gone = next((process for process in served.processes if not process.alive()), None)
        if gone is not None:
            row["error"] = f"{gone.name} is not running:\n{gone.tail()}"
            self.say(f"{label} FAILED: {gone.name} is not running (log: {gone.log_path})")
            return self.record(row)
        try:
            result = self.loadgen(job, self.profile.closed_loop_seconds(windows) + 60, cores)
        except BenchError as exc:
            row["error"] = str(exc)
            self.say(f"{label} FAILED: {exc}")
            return self.record(row)
        if "error" in result:
            row["error"] = result["error"]
            self.say(f"{label} FAILED: {result['error']}")
            return self.record(row)
        row["windows"] = result["windows"]
        row["body_bytes"] = result["body_bytes"]
        row["errors"] = sum(w["errors"] for w in result["windows"])
        row["first_error"] = result["first_error"]
        row["summary"] = {key: spread([w.get(key) for w in result["windows"]]) for key in SUMMARY_KEYS}
        self.say(f"{label} {describe(row)}")
        return self.record(row)

    # ---- wrk cross-check -----------------------------------------------------------------------------------

    def wrk(self, url: str, era: str, op: JSONObject, concurrency: int, seconds: float) -> float | None:
        """req/s that wrk measures for the same request (a check that our load generator is not the limit)."""
        if shutil.which("wrk") is None or op["type"] != "request":
            return None
        headers, rest = envelope(era, op["method"], op.get("params"))
        body = '{"jsonrpc":"2.0","id":1,' + rest[1:]
        script = ["wrk.method = 'POST'", f"wrk.body = {json.dumps(body)}"]
        script += [f"wrk.headers[{json.dumps(name)}] = {json.dumps(value)}" for name, value in headers]
        with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
            lua.write("\n".join(script) + "\n")
            lua.flush()
            argv = [*self.cores.prefix("load"), "wrk", "-t1", f"-c{concurrency}", f"-d{max(1, round(seconds))}s"]
            done = subprocess.run(
                [*argv, "-s", lua.name, url], capture_output=True, text=True, timeout=seconds + 30, check=False
            )
        found = re.search(r"Requests/sec:\s+([\d.]+)", done.stdout)
        if not found or "Non-2xx" in done.stdout:
            self.say(f"wrk gave no usable figure for {url}: {done.stdout[-300:]} {done.stderr[-300:]}")
            return None
        return float(found.group(1))

    # ---- progress latency ----------------------------------------------------------------------------------

    def progress(self, *, system: str, server: str, process: Process, path: str, era: str, interval_ms: int) -> None:
        case = f"paced {interval_ms} ms" if interval_ms else "burst"
        label = f"progress      {system}/{server:<8} {era:<9} {case}"
        if self.out_of_time(label):
            return
        job = {
            "kind": "progress",
            "target": target(process, path),
            "era": era,
            "calls": self.profile.progress_calls,
            "steps": self.profile.progress_steps,
            "interval_ms": interval_ms,
            "tool": "progress",
            "timeout": 60,
        }
        row: JSONObject = {"workload": "progress", "system": system, "server": server, "era": era, "case": case}
        try:
            row["progress"] = self.loadgen(job, 60 * self.profile.progress_calls + 30)
        except BenchError as exc:
            row["error"] = str(exc)
        self.record(row)
        found = row.get("progress", {})
        self.say(
            f"{label}: {found.get('samples', 0)}/{found.get('expected', '?')} notifications, "
            f"p50 {fmt_ms(found.get('p50_us'))}, p99 {fmt_ms(found.get('p99_us'))}"
            + (f", FAILED: {row['error']}" if "error" in row else "")
        )

    # ---- memory --------------------------------------------------------------------------------------------

    def memory(self, *, system: str, server: str, process: Process, path: str) -> None:
        """RSS added by idle handshake sessions, then by open SSE streams (GET streams; listen streams)."""
        if self.out_of_time(f"memory {system}/{server}"):
            return
        point = target(process, path)
        count = self.profile.idle_sessions
        # A few sessions first, so code paths and caches that any first session warms are in the baseline.
        self.loadgen({"kind": "sessions", "target": point, "count": 20}, 120)
        time.sleep(SETTLE_SECONDS)
        before = rss_kb(process.pid)
        opened = self.loadgen({"kind": "sessions", "target": point, "count": count}, 600)
        time.sleep(SETTLE_SECONDS)
        after = rss_kb(process.pid)
        self.record_memory(system, server, HANDSHAKE, "idle sessions", opened["opened"], before, after)
        for era in (HANDSHAKE, STATELESS):
            case = "GET streams" if era == HANDSHAKE else "listen streams"
            if self.out_of_time(f"memory {system}/{server} {case}"):
                return
            self.streams(system, server, process, point, era, case)

    def streams(self, system: str, server: str, process: Process, point: JSONObject, era: str, case: str) -> None:
        job = {"kind": "streams", "target": point, "era": era, "count": self.profile.sse_streams, "timeout": 60}
        loadgen = subprocess.Popen(
            self.loadgen_argv(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        assert loadgen.stdin is not None and loadgen.stdout is not None

        def step(message: str) -> JSONObject:
            assert loadgen.stdin is not None and loadgen.stdout is not None
            loadgen.stdin.write(message + "\n")
            loadgen.stdin.flush()
            line = loadgen.stdout.readline()
            if not line:
                raise BenchError(f"the stream holder ended early: {loadgen.stderr.read() if loadgen.stderr else ''}")
            reply: JSONObject = json.loads(line)
            return reply

        try:
            step(json.dumps(job))
            time.sleep(SETTLE_SECONDS)
            before = rss_kb(process.pid)
            streaming = step("")
            time.sleep(SETTLE_SECONDS)
            after = rss_kb(process.pid)
            step("")
            self.record_memory(system, server, era, case, streaming["count"], before, after)
        except (BenchError, json.JSONDecodeError) as exc:
            self.record(
                {"workload": "memory", "system": system, "server": server, "era": era, "case": case, "error": str(exc)}
            )
            self.say(f"memory        {system}/{server:<8} {era:<9} {case} FAILED: {exc}")
        finally:
            if loadgen.poll() is None:
                loadgen.kill()
            loadgen.wait(10)

    def record_memory(self, system: str, server: str, era: str, case: str, count: int, before: int, after: int) -> None:
        per_item = (after - before) / count if count else None
        self.record(
            {
                "workload": "memory",
                "system": system,
                "server": server,
                "era": era,
                "case": case,
                "memory": {"count": count, "rss_before_kb": before, "rss_after_kb": after, "kb_per_item": per_item},
            }
        )
        shown = "-" if per_item is None else f"{per_item:.1f} KB each"
        self.say(f"memory        {system}/{server:<8} {era:<9} {case:<16} {count} open: {before} → {after} KB, {shown}")


def describe(row: JSONObject) -> str:
    summary = row["summary"]

    def median(key: str) -> float | None:
        value = summary.get(key)
        return None if value is None else value["median"]

    rps = summary["rps"]
    parts = [
        f"{rps['median']:.0f} req/s ({rps['min']:.0f}-{rps['max']:.0f})",
        f"p50 {fmt_ms(median('p50_us'))}",
        f"p99 {fmt_ms(median('p99_us'))}",
    ]
    cpu = median("server_cpu_us")
    if cpu is not None:
        parts.append(f"server {cpu:.0f} µs/req")
    if row.get("errors"):
        parts.append(f"{row['errors']} ERRORS ({row['first_error']})")
    client = median("client_cpu_util")
    if client is not None and client > 0.9:
        parts.append("load generator saturated")
    return ", ".join(parts)
