"""Upstreams are watched from start-up, without a call first: a tool added upstream reaches the platform's clients
(a 2026-07-28 ``subscriptions/listen`` stream and a handshake-era GET stream) within seconds, whether the upstream
announces it on ``subscriptions/listen`` (2026-07-28), on a handshake session's GET stream (handshake-only), or
refuses ``subscriptions/listen`` and announces it on a GET stream (as FastMCP 4.2.3 does; a FastMCP server too)."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.live import LiveServer
from tests.e2e.test_upstream_federation import eventually
from tests.e2e.upstreams import UpstreamServer, federation_platform, upstream_server

pytestmark = pytest.mark.anyio

REQUEST_TIMEOUT = 30.0
TEST_DEADLINE = 90.0
# What a client may wait, from the upstream's notification to its own.
NOTICE_SECONDS = 5.0
KINDS: dict[str, dict[str, bool]] = {
    "2026-07-28": {},
    "handshake-only": {"handshake_only": True},
    "listen-less": {"no_listen": True},
    # A real FastMCP 4 server: -32601 for subscriptions/listen, list changes on a handshake session's GET stream.
    "fastmcp": {"fastmcp": True},
}


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, UpstreamServer]]]:
    tmp = tmp_path_factory.mktemp("watch")
    with ExitStack() as stack:
        upstreams = {kind: upstream_server(stack, tmp / kind, **flags) for kind, flags in KINDS.items()}
        yield federation_platform(stack, tmp / "platform"), upstreams


async def open_streams(platform: LiveServer, slug: str, kind: str, web: int = 0) -> float:
    """The platform's count of open SSE streams of ``kind`` (``get``, ``listen``) for the tenant (every process of
    the host's)."""
    async with httpx2.AsyncClient() as http:
        text = (await http.get(f"{platform.web_urls[web]}/metrics")).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "mcp_open_streams" and sample.labels == {"tenant": slug, "kind": kind}:
                return float(sample.value)
    return 0.0


async def streams_open_upstream(upstream: UpstreamServer, key: str, above: int) -> bool:
    return bool((await upstream.stats())[key] > above)


@dataclass
class Heard:
    """When a 2026-07-28 client's ``subscriptions/listen`` stream and a handshake-era client's GET stream heard of a
    tool list change."""

    listen: anyio.Event = field(default_factory=anyio.Event)
    get: anyio.Event = field(default_factory=anyio.Event)

    async def both(self) -> None:
        with anyio.fail_after(NOTICE_SECONDS):
            await self.listen.wait()
            await self.get.wait()


@asynccontextmanager
async def listening(platform: LiveServer, slug: str, *, web: int = 0) -> AsyncIterator[tuple[Client, Heard]]:
    """Both clients on the tenant, their streams open on the platform; the 2026-07-28 client and what they heard."""
    heard = Heard()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.get.set()

    endpoint = platform.endpoint(slug, web=web)
    async with (
        Client(endpoint, mode="auto", cache=None, read_timeout_seconds=REQUEST_TIMEOUT) as modern,
        Client(endpoint, mode="legacy", cache=None, read_timeout_seconds=REQUEST_TIMEOUT, message_handler=on_message),
        modern.listen(tools_list_changed=True) as subscription,
        anyio.create_task_group() as group,
    ):

        async def drain() -> None:
            async for _ in subscription:
                heard.listen.set()

        group.start_soon(drain)
        for kind in ("get", "listen"):
            await eventually(lambda k=kind: open_streams(platform, slug, k, web), what=f"the tenant's {kind} stream")
        yield modern, heard
        group.cancel_scope.cancel()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_tool_added_upstream_reaches_clients_without_a_call_first(
    watched: tuple[LiveServer, dict[str, UpstreamServer]], kind: str
) -> None:
    platform, upstreams = watched
    upstream = upstreams[kind]
    with anyio.fail_after(TEST_DEADLINE):
        slug = await platform.atenant_create("watch")
        key = "listeners" if kind == "2026-07-28" else "get_streams"
        before = (await upstream.stats())[key]
        await platform.amanage("upstream_add", slug, "up", upstream.url)
        await eventually(lambda: streams_open_upstream(upstream, key, before), what="the platform watching")
        async with listening(platform, slug) as (client, heard):
            name = f"grown_{secrets.token_hex(3)}"
            started = time.monotonic()
            await upstream.grow(name)
            await heard.both()
            print(f"\n{kind} upstream: the clients heard the change {time.monotonic() - started:.2f} s after it")
            assert f"up_{name}" in {tool.name for tool in (await client.list_tools()).tools}
