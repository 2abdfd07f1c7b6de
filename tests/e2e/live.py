"""Starting and stopping the live platform the end-to-end tests drive: processes, data, topologies.

Embedded by default (one ``manage.py serve`` with SQLite, in-memory channel layer and in-process Celery
worker). With ``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL`` set, the production topology instead: two
web processes and a Celery worker sharing a database and a ``redis-server`` of their own (created for the run,
removed at its end: nothing shared is flushed), on the ASGI server ``MCP_E2E_SERVER`` names (``manage.py serve``'s
default when unset). Every process starts in a session of its own, and stopping one ends its whole group.
Either way the platform trusts a test CA for client metadata documents served on loopback (see
``tests/https_documents.py``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit, urlunsplit

import anyio
import pytest

from tests.e2e.commands import CommandRunner
from tests.https_documents import make_test_pki
from tests.workers import made_once, record_database, recorded_database

REPO = Path(__file__).resolve().parents[2]
PYTHON = REPO / ".venv" / "bin" / "python"
CELERY = REPO / ".venv" / "bin" / "celery"

STARTUP_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
COMMAND_TIMEOUT = 90.0
LOG_TAIL_LINES = 80

# The ASGI server the web processes run (``manage.py serve --server``); unset: serve's default.
SERVER = os.environ.get("MCP_E2E_SERVER", "")
TENANT_CACHE_SECONDS = 15
# Short, so tests see keep-alive comments (and stale stream leases) without waiting long.
SSE_KEEPALIVE_SECONDS = 2
# Short, so tests see slow clients cut off without waiting the production defaults.
REQUEST_TIMEOUT_SECONDS = 4

CONFORMANCE_TENANT = "conformance"
PAGED_TENANT = "paged"
PAGED_TOOL_COUNT = 120
PAGED_PROMPT = "pick_language"
PAGED_LANGUAGES = ["python", "perl", "php", "rust", "ruby"]

# Runs in ``manage.py shell -c``: a second tenant whose 120 tools span three pages of 50.
PAGED_TENANT_SCRIPT = f"""
from tenants import services
tenant = services.tenant_create(slug={PAGED_TENANT!r}, name="Paged catalog")
for index in range({PAGED_TOOL_COUNT}):
    services.tool_create(
        tenant=tenant,
        name=f"paged_tool_{{index:03d}}",
        description=f"Paged tool number {{index}}",
        config={{"content": [{{"type": "text", "text": f"paged tool {{index}}"}}]}},
    )
services.prompt_create(
    tenant=tenant,
    name={PAGED_PROMPT!r},
    description="Pick a language",
    arguments=[{{"name": "language", "required": True}}],
    completions={{"language": {PAGED_LANGUAGES!r}}},
    messages=[{{"role": "user", "content": {{"type": "text", "text": "Write it in {{{{language}}}}."}}}}],
)
"""


def production_requested() -> bool:
    return os.environ.get("DATABASE_URL", "").startswith("postgres") and bool(os.environ.get("REDIS_URL"))


# The marks of a module whose tests need the production topology.
PRODUCTION_ONLY = [
    pytest.mark.anyio,
    pytest.mark.production,
    pytest.mark.skipif(
        not production_requested(), reason="needs DATABASE_URL=postgres://… and REDIS_URL (production topology)"
    ),
]


# ---- processes -----------------------------------------------------------------------------------------


def _default_stop_signals() -> None:
    """In the child, before exec: stop signals act as a service manager would deliver them. An ignored signal is
    inherited across exec, so a test run started under ``nohup`` would otherwise hand its SIGHUP-ignoring
    disposition to every platform process it starts."""
    for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)


@dataclass
class ManagedProcess:
    """A child process whose stdout and stderr go to files, so a failing test can show their tails."""

    name: str
    popen: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path
    _files: list[IO[bytes]] = field(default_factory=list, repr=False)

    @classmethod
    def start(cls, name: str, argv: list[str], env: dict[str, str], log_dir: Path) -> ManagedProcess:
        stdout_path = log_dir / f"{name}.stdout.log"
        stderr_path = log_dir / f"{name}.stderr.log"
        stdout = stdout_path.open("wb")
        stderr = stderr_path.open("wb")
        # A session of its own: the process and everything it starts form one group that ``stop`` and ``kill``
        # end together, and a Ctrl-C meant for pytest does not reach it before the teardown does.
        popen = subprocess.Popen(
            argv,
            cwd=REPO,
            env=env,
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_default_stop_signals,
        )
        return cls(name, popen, stdout_path, stderr_path, [stdout, stderr])

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        parts = []
        for label, path in (("stdout", self.stdout_path), ("stderr", self.stderr_path)):
            text = path.read_text(errors="replace") if path.exists() else ""
            kept = "\n".join(text.splitlines()[-lines:])
            parts.append(f"--- {self.name} {label} (last {lines} lines) ---\n{kept}")
        status = "running" if self.popen.poll() is None else f"exited with {self.popen.returncode}"
        return f"[{self.name}: {status}]\n" + "\n".join(parts)

    def _signal_group(self, signum: int) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signum)

    def kill(self) -> None:
        """SIGKILL the process and everything in its group, as a crash or the OOM killer would; wait for it."""
        self._signal_group(signal.SIGKILL)
        self.popen.wait(STOP_TIMEOUT)

    def stop(self) -> None:
        """Terminate, then kill when it does not stop within ``STOP_TIMEOUT``; whatever is left of its group
        is killed too."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(STOP_TIMEOUT)
        self._signal_group(signal.SIGKILL)
        for handle in self._files:
            if not handle.closed:
                handle.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(process: ManagedProcess, port: int) -> None:
    """Poll until ``port`` accepts connections; fail with the process output if it dies or never does."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            pytest.fail(f"{process.name} exited during start-up\n{process.tail()}", pytrace=False)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"{process.name} did not listen on port {port} within {STARTUP_TIMEOUT}s\n{process.tail()}")


def run_command(argv: list[str], env: dict[str, str]) -> str:
    """Run a one-off command to completion; its stdout. Fails the test with its output when it fails."""
    try:
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(argv)} did not finish in {COMMAND_TIMEOUT}s: {exc.stdout!r} {exc.stderr!r}")
    if done.returncode != 0:
        pytest.fail(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}", pytrace=False)
    return done.stdout


# ---- the live platform ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LivePki:
    """The CA the platform trusts for client metadata documents, and a server certificate it signed."""

    ca: Path
    cert: Path
    key: Path


@dataclass
class LiveServer:
    """Base URLs of the running web processes, and a way to run ``manage.py`` against the same data."""

    web_urls: list[str]
    processes: list[ManagedProcess]
    command_env: dict[str, str]
    production: bool
    pki: LivePki
    # Runs ``manage`` and ``amanage`` (one long-lived process for most commands: see tests/e2e/commands.py);
    # without one, each command is a process of its own.
    commands: CommandRunner | None = None

    def endpoint(self, tenant: str = CONFORMANCE_TENANT, *, web: int = 0) -> str:
        """The Streamable HTTP endpoint of ``tenant`` on web process ``web``."""
        return f"{self.web_urls[web]}/t/{tenant}/mcp"

    def sse_endpoint(self, tenant: str = CONFORMANCE_TENANT, *, web: int = 0) -> str:
        """The 2024-11-05 HTTP+SSE endpoint of ``tenant``."""
        return f"{self.web_urls[web]}/t/{tenant}/sse"

    def manage(self, *args: str) -> str:
        if self.commands is None:
            return run_command([str(PYTHON), "manage.py", *args], self.command_env)
        return self.commands.check(*args)

    async def amanage(self, *args: str) -> str:
        """``manage.py`` from async code, without blocking the event loop."""
        return await self.amanage_with({}, *args)

    async def amanage_with(self, env: dict[str, str], *args: str) -> str:
        """``amanage`` with some environment variables changed (say, a Redis URL that loses its nudges): a process
        of its own, unless nothing changes."""
        if not env and self.commands is not None:
            return await self.commands.acheck(*args)
        command_env = {**self.command_env, **env}
        done = await anyio.run_process([str(PYTHON), "manage.py", *args], cwd=REPO, env=command_env, check=False)
        output = done.stdout.decode(errors="replace")
        assert done.returncode == 0, f"manage.py {args[0]} failed:\n{output}\n{done.stderr.decode(errors='replace')}"
        return output

    async def atenant_create(self, prefix: str, then: str = "") -> str:
        """A new tenant ``<prefix>-<random>`` named ``prefix.title()``, made through the services by another
        process (``manage.py shell``), which then runs ``then`` with ``services`` and ``tenant`` bound; its slug."""
        slug = f"{prefix}-{secrets.token_hex(4)}"
        create = f"tenant = services.tenant_create(slug={slug!r}, name={prefix.title()!r}); {then}"
        await self.amanage("shell", "-c", f"from tenants import services; {create}")
        return slug

    def check_alive(self) -> None:
        for process in self.processes:
            if process.popen.poll() is not None:
                pytest.fail(f"{process.name} is not running\n{process.tail()}", pytrace=False)

    def logs(self) -> str:
        return "\n\n".join(process.tail() for process in self.processes)


# What prints the output of a platform a test started for itself (not the session's ``live_platform``), kept in the
# test item's stash: the output is shown when the test fails (tests/e2e/conftest.py).
OWN_PLATFORM_LOGS_KEY = pytest.StashKey[Callable[[], str]]()


def in_tenant(slug: str, statement: str) -> str:
    """``manage.py shell -c`` source that runs ``statement`` with ``services`` and the tenant ``slug`` as ``tenant``."""
    return (
        "from tenants import services; from tenants.models import Tenant; "
        f"tenant = Tenant.objects.get(slug={slug!r}); {statement}"
    )


def command_runner(stack: ExitStack, env: dict[str, str]) -> CommandRunner:
    """A ``CommandRunner`` for ``env`` whose long-lived process ends when ``stack`` closes."""
    runner = CommandRunner(env)
    stack.callback(runner.stop)
    return runner


def base_env(var_dir: Path, secret_key: str, pki: LivePki) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env.update({"MCP_VAR_DIR": str(var_dir), "SECRET_KEY": secret_key, "PYTHONUNBUFFERED": "1"})
    # What a developer sets to let the platform fetch client metadata documents from their own machine.
    env.update({"MCP_CIMD_ALLOWED_NETWORKS": "127.0.0.1/32", "MCP_CIMD_CA_BUNDLE": str(pki.ca)})
    # Every client of a test session registers from the loopback: the budget of an address many people share.
    env.update({"MCP_DCR_PER_ADDRESS_PER_HOUR": "200", "MCP_DCR_PER_NETWORK_PER_HOUR": "400"})
    # Mail (invitations) as files, in one directory for all the platform's processes, for tests to read.
    env.update({"EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend"})
    env.update({"EMAIL_FILE_PATH": str(var_dir.parent / "mail")})
    return env


def live_pki(tmp: Path) -> LivePki:
    return LivePki(*make_test_pki(tmp / "pki"))


def oidc_signing_key() -> str:
    """One RSA key for every process of a topology, as ``MCP_OIDC_RSA_PRIVATE_KEY`` is set in production."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem.decode()


MIGRATED = (("migrate", "--noinput"),)
# What a live platform's database holds before its processes start.
LIVE_DATA = (("migrate", "--noinput"), ("load_conformance_tenant",), ("shell", "-c", PAGED_TENANT_SCRIPT))


def prepare(env: dict[str, str], commands: tuple[tuple[str, ...], ...]) -> None:
    """Run ``commands`` (``manage.py`` argument lists) in order with ``env``, in one long-lived process."""
    runner = CommandRunner(env)
    try:
        for command in commands:
            runner.check(*command)
    finally:
        runner.stop()


def prepare_data(env: dict[str, str]) -> None:
    sqlite_database(env, prepared_with=LIVE_DATA)


SQLITE_NAME = "db.sqlite3"


def _digest(commands: tuple[tuple[str, ...], ...]) -> str:
    return hashlib.sha256(repr(commands).encode()).hexdigest()[:16]


def sqlite_database(env: dict[str, str], *, prepared_with: tuple[tuple[str, ...], ...]) -> None:
    """Give the embedded platform of ``env`` (its ``MCP_VAR_DIR``) a database ``prepared_with`` (``manage.py``
    argument lists) prepared: a copy of one those commands prepared once per test run (``made_once``), as PostgreSQL
    topologies copy a template (``fresh_database``). What the commands write depends on no key of a platform (no
    tenant secret)."""
    with made_once(f"sqlite-{_digest(prepared_with)}.sqlite3") as template:
        if not template.exists():
            with tempfile.TemporaryDirectory(prefix="mcp-sqlite-template-") as directory:
                prepare({**env, "MCP_VAR_DIR": directory}, prepared_with)
                # The commands' process has ended: SQLite folded its write-ahead log into the file when it closed it.
                shutil.move(Path(directory) / SQLITE_NAME, template)
    var_dir = Path(env["MCP_VAR_DIR"])
    var_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, var_dir / SQLITE_NAME)


def start_web(
    name: str, env: dict[str, str], log_dir: Path, *extra: str, port: int | None = None
) -> tuple[ManagedProcess, str]:
    """``manage.py serve`` on ``port`` (a free one when unset); the process and its base URL."""
    port = port or free_port()
    argv = [str(PYTHON), "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port), *extra]
    if SERVER:
        argv += ["--server", SERVER]
    # Longer than a nudge takes, shorter than a test's patience: tests tell the two paths of a change apart.
    env = {
        **env,
        "MCP_TENANT_CACHE_SECONDS": str(TENANT_CACHE_SECONDS),
        "MCP_SSE_KEEPALIVE": str(SSE_KEEPALIVE_SECONDS),
        "MCP_HEADER_TIMEOUT": str(REQUEST_TIMEOUT_SECONDS),
        "MCP_BODY_TIMEOUT": str(REQUEST_TIMEOUT_SECONDS),
    }
    process = ManagedProcess.start(name, argv, env, log_dir)
    return process, f"http://127.0.0.1:{port}"


def embedded_server(stack: ExitStack, tmp: Path) -> LiveServer:
    pki = live_pki(tmp)
    env = base_env(tmp / "var", secrets.token_urlsafe(32), pki)
    prepare_data(env)
    process, url = start_web("web", env, tmp)
    stack.callback(process.stop)
    wait_for_port(process, int(urlsplit(url).port or 0))
    return LiveServer(
        web_urls=[url],
        processes=[process],
        command_env=env,
        production=False,
        pki=pki,
        commands=command_runner(stack, env),
    )


def _admin_url() -> str:
    return urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path="/postgres"))


def _database_url(name: str) -> str:
    return urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{name}"))


def _drop_database(name: str) -> None:
    import psycopg

    with psycopg.connect(_admin_url(), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _template(commands: tuple[tuple[str, ...], ...]) -> str:
    """A database ``commands`` (``manage.py`` argument lists) prepared, made on first use in the test run (one
    worker prepares it, the others wait: ``made_once``) and dropped when the run ends; its name. What the commands
    write depends on no key of a topology (no tenant secret)."""
    import psycopg

    with made_once(f"postgresql-{_digest(commands)}.database") as named:
        if named.exists():
            return recorded_database(named)[1]
        name = f"mcp_e2e_template_{secrets.token_hex(6)}"
        with psycopg.connect(_admin_url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        try:
            env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")}
            with tempfile.TemporaryDirectory() as var_dir:
                env.update({"DATABASE_URL": _database_url(name), "MCP_VAR_DIR": var_dir})
                prepare(env, commands)
        except BaseException:
            _drop_database(name)
            raise
        record_database(named, _admin_url(), name)
        return name


def fresh_database(stack: ExitStack, *, prepared_with: tuple[tuple[str, ...], ...] = ()) -> str:
    """Create ``mcp_e2e_<random>`` next to ``DATABASE_URL``'s database, dropped at teardown; its URL.

    With ``prepared_with`` (``manage.py`` argument lists) the database starts as a copy of one those commands
    prepared (``CREATE DATABASE … TEMPLATE``), made once per test run: a copy takes a fraction of a second where
    ``migrate`` takes seconds.
    """
    import psycopg

    name = f"mcp_e2e_{secrets.token_hex(6)}"
    template = f' TEMPLATE "{_template(prepared_with)}"' if prepared_with else ""
    with psycopg.connect(_admin_url(), autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"{template}')
    stack.callback(_drop_database, name)
    return _database_url(name)


REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class RedisServer:
    """A ``redis-server`` of the run's own on a free loopback port, without persistence: what a test does to it
    (flush, restart, kill) touches no one else's data. ``restart`` loses every key, as a Redis without
    persistence does."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: ManagedProcess | None = None
        self.restarts = 0
        directory.mkdir(parents=True, exist_ok=True)

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        argv = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        argv += ["--dir", str(self.directory), "--daemonize", "no"]
        self.process = ManagedProcess.start(f"redis-{self.restarts}", argv, dict(os.environ), self.directory)
        wait_for_port(self.process, self.port)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.stop()
            self.process = None

    def restart(self) -> None:
        """Kill and start again on the same port, every key gone."""
        self.kill()
        self.restarts += 1
        self.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


def private_redis(stack: ExitStack, directory: Path) -> RedisServer:
    """A started ``RedisServer`` stopped when ``stack`` closes."""
    server = RedisServer(directory)
    server.start()
    stack.callback(server.stop)
    return server


def production_server(stack: ExitStack, tmp: Path) -> LiveServer:
    database_url = fresh_database(stack, prepared_with=LIVE_DATA)
    redis_url = private_redis(stack, tmp / "redis").url()
    secret_key = secrets.token_urlsafe(32)
    signing_key = oidc_signing_key()
    # One key for tenant secrets in every process, as MCP_SECRET_KEYS is set in production.
    secrets_key = base64.b64encode(secrets.token_bytes(32)).decode()
    pki = live_pki(tmp)

    def env_for(name: str) -> dict[str, str]:
        env = base_env(tmp / f"var-{name}", secret_key, pki)
        env.update({"DATABASE_URL": database_url, "REDIS_URL": redis_url, "MCP_OIDC_RSA_PRIVATE_KEY": signing_key})
        env["MCP_SECRET_KEYS"] = secrets_key
        return env

    command_env = env_for("commands")
    worker = ManagedProcess.start(
        "worker",
        [str(CELERY), "-A", "mcp_platform", "worker", "--pool", "threads", "-c", "4", "-l", "WARNING"],
        env_for("worker"),
        tmp,
    )
    stack.callback(worker.stop)
    processes = [worker]
    urls = []
    # web-b is itself two server processes on one socket (serve --workers 2): the supervisor is exercised too.
    for name, workers in (("web-a", "1"), ("web-b", "2")):
        process, url = start_web(name, env_for(name), tmp, "--no-worker", "--workers", workers)
        stack.callback(process.stop)
        processes.append(process)
        urls.append(url)
    server = LiveServer(
        web_urls=urls,
        processes=processes,
        command_env=command_env,
        production=True,
        pki=pki,
        commands=command_runner(stack, command_env),
    )
    for process, url in zip(processes[1:], urls, strict=True):
        wait_for_port(process, int(urlsplit(url).port or 0))
    server.check_alive()
    return server
