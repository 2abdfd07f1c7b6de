"""A production topology of its own for tests that break things: kill a web process or the worker, restart
Redis, terminate PostgreSQL connections, and watch the platform recover without a restart.

Unlike the session's ``live_platform``, each ``Topology`` has its own database and its own ``redis-server``, so
what a test does to them reaches no other test and nothing else on the machine.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tests.e2e.commands import CommandRunner
from tests.e2e.live import (
    CELERY,
    CONFORMANCE_TENANT,
    LivePki,
    ManagedProcess,
    RedisServer,
    base_env,
    command_runner,
    fresh_database,
    live_pki,
    oidc_signing_key,
    private_redis,
    start_web,
    wait_for_port,
)

DEMO_TENANT = "demo"
WEB_PROCESSES = 2


@dataclass
class Topology:
    """Web processes, a Celery worker running beat, PostgreSQL and Redis; any part can be killed and restarted."""

    tmp: Path
    stack: ExitStack
    redis: RedisServer
    database_url: str
    secret_key: str
    signing_key: str
    pki: LivePki
    web: list[ManagedProcess | None] = field(default_factory=list)
    web_urls: list[str] = field(default_factory=list)
    worker: ManagedProcess | None = None
    worker_starts: int = 0
    stopped: list[ManagedProcess] = field(default_factory=list)
    # Settings every process of this topology gets besides the defaults (say, an allowed outbound network).
    extra_env: dict[str, str] = field(default_factory=dict)
    _commands: CommandRunner | None = None

    # ---- configuration -----------------------------------------------------------------------------

    @property
    def database_name(self) -> str:
        return urlsplit(self.database_url).path.lstrip("/")

    def env_for(self, name: str) -> dict[str, str]:
        env = base_env(self.tmp / f"var-{name}", self.secret_key, self.pki)
        env.update(
            {
                "DATABASE_URL": self.database_url,
                "REDIS_URL": self.redis.url(),
                "MCP_OIDC_RSA_PRIVATE_KEY": self.signing_key,
                # One key for tenant secrets in every process (derived from the topology's SECRET_KEY).
                "MCP_SECRET_KEYS": base64.b64encode(hashlib.sha256(self.secret_key.encode()).digest()).decode(),
                **self.extra_env,
            }
        )
        return env

    @property
    def command_env(self) -> dict[str, str]:
        return self.env_for("commands")

    def endpoint(self, tenant: str = CONFORMANCE_TENANT, *, web: int = 0) -> str:
        return f"{self.web_urls[web]}/t/{tenant}/mcp"

    def sse_endpoint(self, tenant: str = CONFORMANCE_TENANT, *, web: int = 0) -> str:
        return f"{self.web_urls[web]}/t/{tenant}/sse"

    # ---- web processes -----------------------------------------------------------------------------

    def start_web(self, index: int) -> None:
        """Start web process ``index``; after a kill, again on the same port, so clients that remember the URL
        reach the new process."""
        restarted = index < len(self.web_urls)
        name = f"web-{index}-again-{len(self.stopped)}" if restarted else f"web-{index}"
        port = urlsplit(self.web_urls[index]).port if index < len(self.web_urls) else None
        process, url = start_web(name, self.env_for(name), self.tmp, "--no-worker", "--no-migrate", port=port)
        if restarted:
            self.web[index] = process
        else:
            self.web.append(process)
            self.web_urls.append(url)
        self.stack.callback(process.stop)
        wait_for_port(process, int(urlsplit(url).port or 0))

    def kill_web(self, index: int) -> None:
        """SIGKILL web process ``index`` and everything it started."""
        process = self.web[index]
        assert process is not None, f"web process {index} is not running"
        process.kill()
        self.stopped.append(process)
        self.web[index] = None

    # ---- the worker --------------------------------------------------------------------------------

    def start_worker(self, loglevel: str = "WARNING") -> None:
        argv = [str(CELERY), "-A", "mcp_platform", "worker", "--beat", "--pool", "threads", "-c", "4"]
        argv += ["-l", loglevel, "--schedule", str(self.tmp / f"beat-schedule-{self.worker_starts}")]
        self.worker = ManagedProcess.start(f"worker-{self.worker_starts}", argv, self.env_for("worker"), self.tmp)
        self.worker_starts += 1
        self.stack.callback(self.worker.stop)

    def kill_worker(self) -> None:
        """SIGKILL the worker and everything it started (its beat included)."""
        assert self.worker is not None, "the worker is not running"
        self.worker.kill()
        self.stopped.append(self.worker)
        self.worker = None

    # ---- Redis and PostgreSQL ----------------------------------------------------------------------

    def restart_redis(self) -> None:
        """Kill Redis and start it again on the same port with no data, as a Redis without persistence does."""
        self.redis.restart()

    def terminate_database_connections(self) -> int:
        """``pg_terminate_backend`` of every connection to this topology's database; how many were ended."""
        import psycopg

        admin_url = urlunsplit(urlsplit(self.database_url)._replace(path="/postgres"))
        with psycopg.connect(admin_url, autocommit=True) as connection:
            rows = connection.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (self.database_name,),
            ).fetchall()
        return sum(1 for (ended,) in rows if ended)

    # ---- commands and logs -------------------------------------------------------------------------

    @property
    def commands(self) -> CommandRunner:
        """Runs ``manage.py`` commands against this topology (see tests/e2e/commands.py)."""
        if self._commands is None:
            self._commands = command_runner(self.stack, self.command_env)
        return self._commands

    def manage(self, *args: str) -> str:
        return self.commands.check(*args)

    async def amanage(self, *args: str) -> str:
        return await self.commands.acheck(*args)

    async def atenant_create(self, prefix: str, then: str = "") -> str:
        """A new tenant ``<prefix>-<random>`` made through the services by another process; its slug."""
        slug = f"{prefix}-{secrets.token_hex(4)}"
        create = f"tenant = services.tenant_create(slug={slug!r}, name={prefix.title()!r}); {then}"
        await self.amanage("shell", "-c", f"from tenants import services; {create}")
        return slug

    def processes(self) -> list[ManagedProcess]:
        running = [p for p in self.web if p is not None]
        if self.worker is not None:
            running.append(self.worker)
        return [*running, *self.stopped]

    def logs(self) -> str:
        return "\n\n".join(process.tail() for process in self.processes())


# What a topology's database holds before its processes start (copied from a database prepared once per run).
TOPOLOGY_DATA = (("migrate", "--noinput"), ("load_demo_tenant",), ("load_conformance_tenant",))


def start_topology(
    stack: ExitStack,
    tmp: Path,
    *,
    web_processes: int = WEB_PROCESSES,
    extra_env: dict[str, str] | None = None,
    worker_loglevel: str = "WARNING",
) -> Topology:
    """Start a topology of its own: a fresh database with the demo and conformance tenants, a private Redis,
    ``web_processes`` web processes (one server process each) and a worker with beat (logging at
    ``worker_loglevel``); ``extra_env`` is set on every process."""
    topology = Topology(
        tmp=tmp,
        stack=stack,
        redis=private_redis(stack, tmp / "redis"),
        database_url=fresh_database(stack, prepared_with=TOPOLOGY_DATA),
        secret_key=secrets.token_urlsafe(32),
        signing_key=oidc_signing_key(),
        pki=live_pki(tmp),
        extra_env=dict(extra_env or {}),
    )
    topology.start_worker(worker_loglevel)
    for index in range(web_processes):
        topology.start_web(index)
    return topology
