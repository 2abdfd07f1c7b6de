"""Upstream MCP servers in the production topology (two web processes, a worker with beat, PostgreSQL, Redis):
a change an upstream announces to one web process reaches a client on the other, and beat's refresh brings in
changes no web process heard."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client

from tests.e2e.faults import Topology, start_topology
from tests.e2e.live import PRODUCTION_ONLY
from tests.e2e.test_upstream_federation import eventually, text_of
from tests.e2e.upstreams import UpstreamServer, upstream_server

pytestmark = PRODUCTION_ONLY

REQUEST_TIMEOUT = 30.0
TEST_DEADLINE = 120.0
REFRESH_SECONDS = 3


@pytest.fixture(scope="module")
def federated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Topology, UpstreamServer]]:
    tmp = tmp_path_factory.mktemp("upstream-topology")
    with ExitStack() as stack:
        upstream = upstream_server(stack, tmp / "upstream")
        extra = {"MCP_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.1/32", "MCP_UPSTREAM_REFRESH_SECONDS": str(REFRESH_SECONDS)}
        yield start_topology(stack, tmp / "topology", extra_env=extra), upstream


def client(topology: Topology, slug: str, web: int, **options: Any) -> Client:
    return Client(
        topology.endpoint(slug, web=web), mode="legacy", cache=None, read_timeout_seconds=REQUEST_TIMEOUT, **options
    )


async def grown_tool_listed(connected: Client, name: str) -> bool:
    return name in {tool.name for tool in (await connected.list_tools()).tools}


async def test_an_upstream_change_heard_by_one_web_process_reaches_a_client_of_the_other(
    federated: tuple[Topology, UpstreamServer],
) -> None:
    topology, upstream = federated
    slug = await topology.atenant_create("fed")
    await topology.amanage("upstream_add", slug, "up", upstream.url)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    name = f"grown_{secrets.token_hex(3)}"
    with anyio.fail_after(TEST_DEADLINE):
        async with (
            client(topology, slug, 1, message_handler=on_message) as listener,
            client(topology, slug, 0) as caller,
        ):
            assert text_of(await caller.call_tool("up_echo", {"text": "hi"})) == "echo: hi"
            await caller.call_tool("up_grow", {"name": name})
            await changed.wait()
            await eventually(lambda: grown_tool_listed(listener, f"up_{name}"), what="the grown tool on web 1")
            assert text_of(await listener.call_tool(f"up_{name}", {})) == f"I am {name}"


async def test_beat_brings_in_a_change_no_web_process_heard(federated: tuple[Topology, UpstreamServer]) -> None:
    topology, upstream = federated
    slug = await topology.atenant_create("beat")
    await topology.amanage("upstream_add", slug, "up", upstream.url)
    name = f"quiet_{secrets.token_hex(3)}"
    # Straight to the upstream: no web process has a session for this tenant's upstream, so only beat can notice.
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(upstream.url, cache=None) as direct:
            await direct.call_tool("grow", {"name": name})
        async with client(topology, slug, 1) as connected:
            await eventually(
                lambda: grown_tool_listed(connected, f"up_{name}"),
                timeout=10 * REFRESH_SECONDS + 20,
                what="beat's refresh",
            )
