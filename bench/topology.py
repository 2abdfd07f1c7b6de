"""The processes under test: our platform's web processes and Celery worker, the SDK peer, the bare app.

Every server runs under the ASGI server named by the caller, pinned with ``taskset`` to the server cores; the
load generator gets the remaining core. PostgreSQL is the machine's own service, reached through ``DATABASE_URL``;
Redis is a ``redis-server`` of the run's own (``PrivateRedis``; unpinned, like PostgreSQL).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
STARTUP_TIMEOUT = 90.0
STOP_TIMEOUT = 10.0
ASGI_SERVERS = ("daphne", "uvicorn", "granian")


class TopologyError(Exception):
    """A process did not start, or the data it needs could not be prepared."""


def installed_servers() -> list[str]:
    return [name for name in ASGI_SERVERS if importlib.util.find_spec(name) is not None]


# ---- cores ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cores:
    """Which cores the servers and the load generator run on (empty: not pinned)."""

    server: tuple[int, ...]
    load: tuple[int, ...]

    @classmethod
    def detect(cls, pin: bool = True) -> Cores:
        available = sorted(os.sched_getaffinity(0))
        if not pin or len(available) < 2 or shutil.which("taskset") is None:
            return cls((), ())
        return cls(tuple(available[:-1]), (available[-1],))

    @property
    def pinned(self) -> bool:
        return bool(self.server)

    def prefix(self, role: str) -> list[str]:
        cores = self.server if role == "server" else self.load
        return ["taskset", "-c", ",".join(map(str, cores))] if cores else []

    def describe(self) -> str:
        if not self.pinned:
            return "not pinned"
        return f"servers on core(s) {','.join(map(str, self.server))}, load generator on {self.load[0]}"


# ---- processes -----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (servers such as granian serve from a child process)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        queue += children.get(current, [])
    return found


def rss_kb(pid: int) -> int:
    """Resident set size of ``pid`` and its descendants, in KiB."""
    total = 0
    for member in descendants(pid):
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


@dataclass
class Process:
    name: str
    argv: list[str]
    popen: subprocess.Popen[bytes]
    log_path: Path
    port: int | None = None
    _log: IO[bytes] | None = field(default=None, repr=False)

    @classmethod
    def start(cls, name: str, argv: list[str], env: dict[str, str], log_dir: Path, port: int | None = None) -> Process:
        log_path = log_dir / f"{name}.log"
        log = log_path.open("wb")
        popen = subprocess.Popen(
            argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        return cls(name, argv, popen, log_path, port, log)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def alive(self) -> bool:
        return self.popen.poll() is None

    def wait_listening(self, timeout: float = STARTUP_TIMEOUT) -> None:
        assert self.port is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise TopologyError(f"{self.name} exited during start-up:\n{self.tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                    return
            except OSError:
                time.sleep(0.1)
        raise TopologyError(f"{self.name} did not listen on {self.port} within {timeout:.0f}s:\n{self.tail()}")

    def stop(self) -> None:
        if self.alive():
            self.popen.terminate()
            try:
                self.popen.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(STOP_TIMEOUT)
        if self._log is not None:
            self._log.close()
            self._log = None


# ---- ASGI server command lines -------------------------------------------------------------------------


def asgi_command(server: str, app: str, port: int) -> list[str]:
    """The ASGI server ``server`` serving ``app`` (``module:attribute``) on 127.0.0.1:``port``, quietly."""
    host = "127.0.0.1"
    if server == "uvicorn":
        return [
            PYTHON,
            "-m",
            "uvicorn",
            app,
            "--host",
            host,
            "--port",
            str(port),
            "--no-access-log",
            "--log-level",
            "warning",
        ]
    if server == "daphne":
        return [PYTHON, "-m", "daphne", "-b", host, "-p", str(port), "-v", "0", app]
    if server == "granian":
        return [
            PYTHON,
            "-m",
            "granian",
            "--interface",
            "asgi",
            "--host",
            host,
            "--port",
            str(port),
            "--workers",
            "1",
            "--no-ws",
            "--log-level",
            "warning",
            "--no-access-log",
            app,
        ]
    raise ValueError(f"unknown ASGI server {server!r}")


def platform_command(server: str, port: int, via_serve: bool) -> list[str]:
    """How one web process of our platform starts under ``server``.

    ``manage.py serve --server`` when the command offers it (it applies the platform's own start-up tuning);
    otherwise daphne through ``manage.py serve`` (its server) and the others on the ASGI application directly.
    """
    common = ["--no-worker", "--no-migrate", "--host", "127.0.0.1", "--port", str(port)]
    if via_serve:
        return [PYTHON, "manage.py", "serve", "--server", server, *common]
    if server == "daphne":
        return [PYTHON, "manage.py", "serve", *common]
    command = asgi_command(server, "mcp_platform.asgi:application", port)
    # Channels' router has no lifespan protocol: uvicorn would log a warning at every start.
    return [*command[:3], "--lifespan", "off", *command[3:]] if server == "uvicorn" else command


# ---- data ----------------------------------------------------------------------------------------------


def _admin_url(database_url: str) -> str:
    return urlunsplit(urlsplit(database_url)._replace(path="/postgres"))


def _database_name(database_url: str) -> str:
    return urlsplit(database_url).path.lstrip("/")


def seed_fingerprint(catalog_tools: int) -> str:
    """Changes whenever the seeded data could: migrations, the bench fixtures, the tool count."""
    digest = hashlib.sha256(str(catalog_tools).encode())
    sources = sorted(REPO.glob("*/migrations/*.py")) + sorted(REPO.glob("mcp_platform/*/migrations/*.py"))
    sources += [REPO / "tenants/builtin/bench_fixtures.py", REPO / "tenants/management/commands/load_bench_tenants.py"]
    for path in sources:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def prepare_database(database_url: str, env: dict[str, str], catalog_tools: int, log: IO[str]) -> None:
    """A fresh ``database_url`` database copied from a seeded template (migrated, bench tenants loaded).

    The template ``<name>_seed`` is rebuilt only when ``seed_fingerprint`` changes; loading 10,000 tools through
    the services takes about a minute, copying the template a second.
    """
    import psycopg

    name = _database_name(database_url)
    seed = f"{name}_seed"
    fingerprint = seed_fingerprint(catalog_tools)
    with psycopg.connect(_admin_url(database_url), autocommit=True) as admin:
        row = admin.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", [seed]
        ).fetchone()
        if row is None or row[0] != fingerprint:
            log.write(f"  building the seed database {seed} (migrations, bench tenants, {catalog_tools} tools)…\n")
            log.flush()
            admin.execute(f'DROP DATABASE IF EXISTS "{seed}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{seed}"')
            seed_env = {**env, "DATABASE_URL": urlunsplit(urlsplit(database_url)._replace(path=f"/{seed}"))}
            for argv in (
                [PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"],
                [PYTHON, "manage.py", "load_bench_tenants", "--catalog-tools", str(catalog_tools)],
            ):
                done = subprocess.run(argv, cwd=REPO, env=seed_env, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise TopologyError(f"{' '.join(argv[1:])} failed:\n{done.stdout}\n{done.stderr}")
            admin.execute(f"COMMENT ON DATABASE \"{seed}\" IS '{fingerprint}'")
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{seed}"')


class PrivateRedis:
    """A ``redis-server`` of the run's own on a free loopback port, without persistence: the run flushes and
    restarts it at will and touches no one else's data. ``restart`` loses every key, as such a Redis does."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.port = free_port()
        self.process: Process | None = None
        self.restarts = 0

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        server = shutil.which("redis-server")
        if server is None:
            raise TopologyError("redis-server is not installed (apt-get install redis-server)")
        argv = [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        argv += ["--dir", str(self.log_dir), "--daemonize", "no"]
        self.process = Process.start(f"redis-{self.restarts}", argv, dict(os.environ), self.log_dir, self.port)
        self.process.wait_listening()

    def restart(self) -> None:
        """SIGKILL and start again on the same port, every key gone."""
        if self.process is not None:
            self.process.popen.kill()
            self.process.stop()
        self.restarts += 1
        self.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


# ---- the stack -----------------------------------------------------------------------------------------


@dataclass
class Stack:
    """Everything started for one run; ``stop_all`` ends it in reverse order."""

    cores: Cores
    log_dir: Path
    platform_env: dict[str, str]
    via_serve: bool
    processes: list[Process] = field(default_factory=list)

    def _start(self, name: str, argv: list[str], env: dict[str, str], port: int | None) -> Process:
        process = Process.start(name, [*self.cores.prefix("server"), *argv], env, self.log_dir, port)
        self.processes.append(process)
        return process

    def stop(self, process: Process) -> None:
        process.stop()
        if process in self.processes:
            self.processes.remove(process)

    def stop_all(self) -> None:
        while self.processes:
            self.stop(self.processes[-1])

    def start_worker(self, *extra: str) -> Process:
        celery = [PYTHON, "-m", "celery", "-A", "mcp_platform", "worker", "--pool", "threads", "-c", "4"]
        return self._start("celery-worker", [*celery, "-l", "WARNING", *extra], self.platform_env, None)

    def start_web(self, server: str, name: str, env: dict[str, str] | None = None) -> Process:
        port = free_port()
        argv = platform_command(server, port, self.via_serve)
        process = self._start(name, argv, env or self.platform_env, port)
        process.wait_listening()
        return process

    def start_app(self, server: str, app: str, name: str, extra_env: dict[str, str] | None = None) -> Process:
        port = free_port()
        env = {**base_env(), **(extra_env or {})}
        process = self._start(name, asgi_command(server, app, port), env, port)
        process.wait_listening()
        return process


# Set by the harness per process, or would change what a process is (several workers behind one port).
NOT_INHERITED = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "MCP_SERVER", "MCP_WEB_WORKERS")


def base_env() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    return {**keep, "PYTHONUNBUFFERED": "1", "LOG_LEVEL": "WARNING"}
