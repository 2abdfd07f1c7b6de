"""The production topology spread over hosts with a network between them: a data host (PostgreSQL and Redis), two
web hosts and a worker host, each a network namespace with its own address (``tests/e2e/netns.py``), the
platform's processes started inside them with ``ip netns exec``.

The data host's Redis is a ``redis-server`` of the topology's own, running in the data namespace on the host's
second address. Its PostgreSQL is a database of the topology's own on the machine's server (a copy of the
prepared template, as ``tests/e2e/faults.py`` makes them: a private cluster would spend far longer on ``initdb``
and migrations than the tests take), reached on the data host's first address through the delay relay
(``tests/e2e/delay_relay.py``), which sets the round trip to the database. So every byte between a platform
process and PostgreSQL or Redis crosses the router, where a partition drops it, and the database is as far
away as the test says. The test's own commands (``manage.py shell``) run in the test's namespace, straight on the
machine's PostgreSQL and through the router to Redis.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import socket
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.e2e.commands import CommandRunner
from tests.e2e.delay_relay import RelayControl
from tests.e2e.faults import TOPOLOGY_DATA
from tests.e2e.live import (
    CELERY,
    PYTHON,
    REDIS_SERVER,
    REQUEST_TIMEOUT_SECONDS,
    SSE_KEEPALIVE_SECONDS,
    STARTUP_TIMEOUT,
    TENANT_CACHE_SECONDS,
    LivePki,
    ManagedProcess,
    base_env,
    command_runner,
    fresh_database,
    live_pki,
    oidc_signing_key,
)
from tests.e2e.netns import Host, Network

# The hosts and how many addresses each has: the data host one for PostgreSQL and one for Redis, so a partition
# can cut a host off from either alone.
HOSTS = {"data": 2, "web-a": 1, "web-b": 1, "worker": 1}
WEB_HOSTS = ("web-a", "web-b")
WEB_PORT = 8000
POSTGRES_PORT = 5432
REDIS_PORT = 6379
WORKER_CONCURRENCY = 4


@dataclass
class Hosts:
    """The running multi-host topology."""

    tmp: Path
    network: Network
    database_url: str
    secret_key: str
    signing_key: str
    pki: LivePki
    relay: RelayControl
    commands: CommandRunner | None = None
    processes: list[ManagedProcess] = field(default_factory=list)

    # ---- where things are --------------------------------------------------------------------------

    @property
    def data(self) -> Host:
        return self.network.hosts["data"]

    @property
    def postgres_address(self) -> str:
        return self.data.addresses[0]

    @property
    def redis_address(self) -> str:
        return self.data.addresses[1]

    @property
    def worker(self) -> Host:
        return self.network.hosts["worker"]

    def web(self, index: int) -> Host:
        return self.network.hosts[WEB_HOSTS[index]]

    def endpoint(self, tenant: str, *, web: int = 0) -> str:
        return f"http://{self.web(web).address}:{WEB_PORT}/t/{tenant}/mcp"

    @property
    def database_name(self) -> str:
        return urlsplit(self.database_url).path.lstrip("/")

    def database_url_on_data_host(self) -> str:
        """The topology's database as the platform's hosts reach it: on the data host, through the relay."""
        parts = urlsplit(self.database_url)
        user = parts.netloc.rpartition("@")[0]
        address = f"{self.postgres_address}:{POSTGRES_PORT}"
        netloc = f"{user}@{address}" if user else address
        return urlunsplit(parts._replace(netloc=netloc))

    def redis_url(self) -> str:
        return f"redis://{self.redis_address}:{REDIS_PORT}/0"

    # ---- the network -------------------------------------------------------------------------------

    def set_database_round_trip(self, milliseconds: float) -> None:
        """Every byte to and from PostgreSQL waits half of ``milliseconds`` each way (on top of the path's own)."""
        self.relay.set_delay(milliseconds / 2)

    def database_round_trip(self, samples: int = 20) -> float:
        """The median time of ``SELECT 1`` over an open connection through the data host (seconds)."""
        import psycopg

        timings = []
        with psycopg.connect(self.database_url_on_data_host(), autocommit=True, connect_timeout=10) as connection:
            connection.execute("SELECT 1")
            for _ in range(samples):
                started = time.perf_counter()
                connection.execute("SELECT 1")
                timings.append(time.perf_counter() - started)
        return sorted(timings)[len(timings) // 2]

    # ---- processes and commands --------------------------------------------------------------------

    def env_for(self, name: str) -> dict[str, str]:
        env = base_env(self.tmp / f"var-{name}", self.secret_key, self.pki)
        env.update(
            {
                "DATABASE_URL": self.database_url_on_data_host(),
                "REDIS_URL": self.redis_url(),
                "MCP_OIDC_RSA_PRIVATE_KEY": self.signing_key,
                # One key for tenant secrets in every process (derived from the topology's SECRET_KEY).
                "MCP_SECRET_KEYS": base64.b64encode(hashlib.sha256(self.secret_key.encode()).digest()).decode(),
                # A load balancer in front of the web hosts would send either name.
                "ALLOWED_HOSTS": ",".join(self.web(index).address for index in range(len(WEB_HOSTS))),
            }
        )
        return env

    @property
    def command_env(self) -> dict[str, str]:
        """The test's own commands: in its namespace, on the machine's PostgreSQL, Redis through the router."""
        return {**self.env_for("commands"), "DATABASE_URL": self.database_url}

    def start(self, name: str, host: Host, argv: list[str], env: dict[str, str]) -> ManagedProcess:
        process = ManagedProcess.start(name, host.command(*argv), env, self.tmp)
        self.processes.append(process)
        return process

    async def amanage(self, *args: str) -> str:
        assert self.commands is not None
        return await self.commands.acheck(*args)

    async def atenant_create(self, prefix: str, then: str = "") -> str:
        """A new tenant ``<prefix>-<random>`` made through the services by the test's command process; its slug."""
        slug = f"{prefix}-{secrets.token_hex(4)}"
        create = f"tenant = services.tenant_create(slug={slug!r}, name={prefix.title()!r}); {then}"
        await self.amanage("shell", "-c", f"from tenants import services; {create}")
        return slug

    def tool_run(self, task_id: str) -> dict[str, Any]:
        """The stored row of a task: its status, generation (its starts) and attempts (its claims by a worker)."""
        import psycopg
        from psycopg.rows import dict_row

        with psycopg.connect(self.database_url, row_factory=dict_row) as connection:
            query = "SELECT status, generation, attempts FROM jobs_toolrun WHERE id = %s"
            row = connection.execute(query, (task_id,)).fetchone()
        assert row is not None, f"no task {task_id}"
        return dict(row)

    def logs(self) -> str:
        return "\n\n".join(process.tail() for process in self.processes)


# Where a running topology is kept, so a failing test shows what its processes printed (tests/e2e/conftest.py).
HOSTS_KEY = pytest.StashKey["Hosts"]()


def wait_for_address(process: ManagedProcess, address: str, port: int) -> None:
    """Poll until ``address:port`` accepts connections from the test's namespace; fail with the process output if
    it dies or never does."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if not process.alive:
            pytest.fail(f"{process.name} exited during start-up\n{process.tail()}", pytrace=False)
        try:
            with socket.create_connection((address, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"{process.name} did not listen on {address}:{port} within {STARTUP_TIMEOUT}s\n{process.tail()}")


def _start_relay(stack: ExitStack, hosts: Hosts, upstream: str) -> None:
    argv = [str(PYTHON), "-m", "tests.e2e.delay_relay", "--namespace", str(hosts.data.namespace_file)]
    argv += ["--listen", f"{hosts.postgres_address}:{POSTGRES_PORT}", "--upstream", upstream]
    argv += ["--control", str(hosts.relay.path)]
    # Started in the test's namespace: it listens in the data host's and connects to the machine's PostgreSQL.
    relay = ManagedProcess.start("delay-relay", argv, dict(os.environ), hosts.tmp)
    hosts.processes.append(relay)
    stack.callback(relay.stop)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not hosts.relay.ready():
        if not relay.alive or time.monotonic() > deadline:
            pytest.fail(f"the delay relay did not start\n{relay.tail()}", pytrace=False)
        time.sleep(0.05)


def _start_redis(stack: ExitStack, hosts: Hosts) -> None:
    directory = hosts.tmp / "redis"
    directory.mkdir(parents=True, exist_ok=True)
    argv = [REDIS_SERVER, "--bind", hosts.redis_address, "--port", str(REDIS_PORT), "--save", "", "--appendonly"]
    # Reached from the other hosts' addresses, on a network only the topology's namespaces are on.
    argv += ["no", "--protected-mode", "no", "--dir", str(directory), "--daemonize", "no"]
    redis = hosts.start("redis", hosts.data, argv, dict(os.environ))
    stack.callback(redis.stop)
    wait_for_address(redis, hosts.redis_address, REDIS_PORT)


def _stop_together(processes: list[ManagedProcess]) -> None:
    """Ask every process to stop at once, then wait for each (their shutdowns overlap)."""
    for process in processes:
        if process.alive:
            process.popen.terminate()
    for process in processes:
        process.stop()


def _start_platform(stack: ExitStack, hosts: Hosts) -> None:
    started: list[ManagedProcess] = []
    stack.callback(_stop_together, started)
    worker_argv = [str(CELERY), "-A", "mcp_platform", "worker", "--beat", "--pool", "threads"]
    worker_argv += ["-c", str(WORKER_CONCURRENCY), "-l", "WARNING", "--schedule", str(hosts.tmp / "beat-schedule")]
    started.append(hosts.start("worker", hosts.worker, worker_argv, hosts.env_for("worker")))
    web = []
    for index, name in enumerate(WEB_HOSTS):
        host = hosts.web(index)
        argv = [str(PYTHON), "manage.py", "serve", "--host", host.address, "--port", str(WEB_PORT)]
        env = {
            **hosts.env_for(name),
            "MCP_TENANT_CACHE_SECONDS": str(TENANT_CACHE_SECONDS),
            "MCP_SSE_KEEPALIVE": str(SSE_KEEPALIVE_SECONDS),
            "MCP_HEADER_TIMEOUT": str(REQUEST_TIMEOUT_SECONDS),
            "MCP_BODY_TIMEOUT": str(REQUEST_TIMEOUT_SECONDS),
        }
        process = hosts.start(name, host, [*argv, "--no-worker", "--no-migrate"], env)
        started.append(process)
        web.append((process, host))
    for process, host in web:
        wait_for_address(process, host.address, WEB_PORT)


def start_hosts(stack: ExitStack, tmp: Path, database_admin_url: str) -> Hosts:
    """Make the network and start everything on it; ``stack`` stops and removes all of it. ``database_admin_url``
    is the machine's PostgreSQL as the test reaches it (its host and port are where the relay connects)."""
    network = Network()
    stack.callback(network.close)
    network.open(HOSTS)
    upstream = urlsplit(database_admin_url)
    pki = live_pki(tmp)
    hosts = Hosts(
        tmp=tmp,
        network=network,
        database_url=fresh_database(stack, prepared_with=TOPOLOGY_DATA),
        secret_key=secrets.token_urlsafe(32),
        signing_key=oidc_signing_key(),
        pki=pki,
        relay=RelayControl(tmp / "delay-relay.sock"),
    )
    _start_relay(stack, hosts, f"{upstream.hostname or '127.0.0.1'}:{upstream.port or POSTGRES_PORT}")
    _start_redis(stack, hosts)
    hosts.commands = command_runner(stack, hosts.command_env)
    _start_platform(stack, hosts)
    return hosts
