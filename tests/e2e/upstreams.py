"""Processes for the federation tests: upstream MCP servers (the SDK's ``MCPServer`` over Streamable HTTP or
2024-11-05 HTTP+SSE, see ``tests/upstreams/sdk_server.py``; a FastMCP server, ``tests/upstreams/fastmcp_server.py``)
and a platform of their own that reaches them.

The platform allows loopback through the outbound allowed-networks setting explicitly (as a developer does for
local upstreams), and trips its circuit breaker after two failures with a one-second cool-down, so the tests see
a dead upstream fail fast and recover without waiting the production defaults.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2

from tests.e2e.browser import PASSWORD
from tests.e2e.live import (
    MIGRATED,
    PYTHON,
    LiveServer,
    ManagedProcess,
    base_env,
    command_runner,
    free_port,
    in_tenant,
    live_pki,
    sqlite_database,
    start_web,
    wait_for_port,
)

CIRCUIT_FAILURES = 2
CIRCUIT_COOLDOWN_SECONDS = 1


@dataclass
class UpstreamServer:
    """An SDK upstream process on a fixed port, which can be killed and started again on the same port."""

    directory: Path
    transport: str = "streamable-http"
    # Refuse the 2026-07-28 era (server/discover), so clients hold a 2025-11-25 session with it.
    handshake_only: bool = False
    # Refuse subscriptions/listen (-32601) as FastMCP 4.2.3 does; announce list changes on GET streams only.
    no_listen: bool = False
    # Publish notifications/tools/list_changed every millisecond on its listen streams.
    flood: bool = False
    port: int = 0
    # Extra resources it lists, at these URIs (``--resource``).
    resources: tuple[str, ...] = ()
    # The cache hints of its list results, as ``TTL_MS:SCOPE`` (``--list-cache``); empty: the SDK's own.
    list_cache: str = ""
    # Open a handshake-era session's GET stream this many milliseconds late (``--slow-get-stream``).
    slow_get_stream_ms: int = 0
    # A FastMCP server instead (``tests/upstreams/fastmcp_server.py``: Streamable HTTP, none of the options above).
    fastmcp: bool = False
    process: ManagedProcess | None = None
    starts: int = 0

    def __post_init__(self) -> None:
        self.port = self.port or free_port()
        self.directory.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        path = "/sse" if self.transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        if self.fastmcp:
            self._start([str(PYTHON), "-m", "tests.upstreams.fastmcp_server", "--port", str(self.port)])
            return
        argv = [str(PYTHON), "-m", "tests.upstreams.sdk_server", "--port", str(self.port)]
        argv += ["--transport", self.transport]
        if self.handshake_only:
            argv.append("--handshake-only")
        for uri in self.resources:
            argv += ["--resource", uri]
        if self.no_listen:
            argv.append("--no-listen")
        if self.flood:
            argv.append("--flood")
        if self.list_cache:
            argv += ["--list-cache", self.list_cache]
        if self.slow_get_stream_ms:
            argv += ["--slow-get-stream", str(self.slow_get_stream_ms)]
        self._start(argv)

    def _start(self, argv: list[str]) -> None:
        self.starts += 1
        self.process = ManagedProcess.start(
            f"upstream-{self.port}-{self.starts}", argv, dict(os.environ), self.directory
        )
        wait_for_port(self.process, self.port)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def grow(self, name: str) -> None:
        """Add the tool ``name`` and announce it on every listen and GET stream (no MCP call involved)."""
        async with httpx2.AsyncClient() as http:
            (await http.post(f"{self.base}/grow", params={"name": name})).raise_for_status()

    async def reshape(
        self, name: str, description: str, required: tuple[str, ...] = (), optional: tuple[str, ...] = ()
    ) -> None:
        """Replace (or add) the tool ``name`` with one of this description and these string arguments, and announce
        it on every listen and GET stream."""
        spec = {"name": name, "description": description, "required": list(required), "optional": list(optional)}
        async with httpx2.AsyncClient() as http:
            (await http.post(f"{self.base}/reshape", json=spec)).raise_for_status()

    async def stats(self) -> dict[str, Any]:
        """Open listen and GET streams, notifications published, and JSON-RPC methods received by name."""
        async with httpx2.AsyncClient() as http:
            answer = await http.get(f"{self.base}/stats")
            answer.raise_for_status()
            stats: dict[str, Any] = answer.json()
            return stats

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.stop()
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


def upstream_server(
    stack: ExitStack,
    directory: Path,
    transport: str = "streamable-http",
    *,
    handshake_only: bool = False,
    resources: tuple[str, ...] = (),
    no_listen: bool = False,
    flood: bool = False,
    list_cache: str = "",
    fastmcp: bool = False,
    slow_get_stream_ms: int = 0,
) -> UpstreamServer:
    server = UpstreamServer(
        directory,
        transport,
        handshake_only,
        no_listen,
        flood,
        resources=resources,
        list_cache=list_cache,
        fastmcp=fastmcp,
        slow_get_stream_ms=slow_get_stream_ms,
    )
    server.start()
    stack.callback(server.stop)
    return server


def federation_platform(
    stack: ExitStack, tmp: Path, extra_env: dict[str, str] | None = None, **settings: str
) -> LiveServer:
    """One embedded platform (``manage.py serve``) with loopback upstreams allowed and a quick circuit breaker
    (``extra_env`` and ``settings``: more environment, e.g. ``MCP_UPSTREAM_LEAN_CALLS="false"``)."""
    pki = live_pki(tmp)
    env = base_env(tmp / "var", secrets.token_urlsafe(32), pki)
    env.update(
        {
            "MCP_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.1/32",
            "MCP_UPSTREAM_CIRCUIT_FAILURES": str(CIRCUIT_FAILURES),
            "MCP_UPSTREAM_CIRCUIT_COOLDOWN": str(CIRCUIT_COOLDOWN_SECONDS),
            **(extra_env or {}),
            **settings,
        }
    )
    sqlite_database(env, prepared_with=MIGRATED)
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


@dataclass(frozen=True)
class OwnedUpstream:
    """A platform whose tenant ``slug`` has the upstream ``up`` (``upstream``, stored as ``upstream_id``), and the
    tenant's ``owner`` (by membership alone), who signs in with ``PASSWORD``: the admin's upstream pages' scene."""

    live: LiveServer
    upstream: UpstreamServer
    slug: str
    owner: str
    upstream_id: int

    @property
    def base(self) -> str:
        return self.live.web_urls[0]

    @property
    def upstream_page(self) -> str:
        return f"{self.base}/admin/tenants/upstream/{self.upstream_id}/change/"


def owned_upstream(stack: ExitStack, tmp: Path, *upstream_add_options: str) -> OwnedUpstream:
    """An SDK upstream and a federation platform (stopped with ``stack``), a new tenant with its owner, and the
    upstream added to it as ``up`` (``upstream_add_options``: the command's, e.g. ``--changes hold``)."""
    upstream = upstream_server(stack, tmp / "upstream")
    live = federation_platform(stack, tmp / "platform")
    suffix = secrets.token_hex(3)
    slug, owner = f"acme-{suffix}", f"olivia-{suffix}"
    live.manage(
        "shell",
        "-c",
        f"from django.contrib.auth import get_user_model; from tenants import services; "
        f"tenant = services.tenant_create(slug={slug!r}, name='Acme'); "
        f"owner = get_user_model().objects.create_user({owner!r}, '{owner}@acme.example', {PASSWORD!r}); "
        f"services.membership_add(tenant=tenant, user=owner, role='owner')",
    )
    live.manage("upstream_add", slug, "up", upstream.url, *upstream_add_options)
    output = live.manage("shell", "-c", in_tenant(slug, "print('ID', tenant.upstreams.get(name='up').pk)"))
    return OwnedUpstream(live, upstream, slug, owner, int(output.split("ID")[-1].split()[0]))


def platform_and_upstreams(tmp: Path) -> Iterator[tuple[LiveServer, UpstreamServer, UpstreamServer]]:
    """The platform, a Streamable HTTP upstream and an HTTP+SSE-only upstream, stopped at the end."""
    with ExitStack() as stack:
        upstream = upstream_server(stack, tmp / "upstream-http")
        legacy = upstream_server(stack, tmp / "upstream-sse", transport="sse")
        platform = federation_platform(stack, tmp / "platform")
        yield platform, upstream, legacy
