"""Watching upstreams in the production topology (two web processes, a worker, PostgreSQL, Redis): one process of the
deployment watches each upstream (a lease in Redis), another takes the watch over when it dies, and a change an
upstream announces reaches a client of either web process within seconds, without a call first."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import anyio
import pytest

from tests.e2e.faults import Topology, start_topology
from tests.e2e.live import PRODUCTION_ONLY
from tests.e2e.test_upstream_federation import eventually
from tests.e2e.test_upstream_watch import KINDS, listening
from tests.e2e.upstreams import UpstreamServer, upstream_server

pytestmark = [*PRODUCTION_ONLY, pytest.mark.timeout(400)]

TEST_DEADLINE = 150.0
WATCH_CHECK_SECONDS = 1.0


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Topology, dict[str, UpstreamServer]]]:
    tmp = tmp_path_factory.mktemp("watch-topology")
    with ExitStack() as stack:
        upstreams = {kind: upstream_server(stack, tmp / kind, **flags) for kind, flags in KINDS.items()}
        extra = {"MCP_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.1/32", "MCP_UPSTREAM_WATCH_CHECK": str(WATCH_CHECK_SECONDS)}
        yield start_topology(stack, tmp / "topology", extra_env=extra), upstreams


def connected_to(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds an established TCP connection to ``port`` on loopback."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote_port = int(fields[2].split(":")[1], 16)
        if remote_port == port and fields[3] == "01" and fields[9] in inodes:
            return True
    return False


async def listeners(upstream: UpstreamServer) -> int:
    return int((await upstream.stats())["listeners"])


@pytest.mark.parametrize("kind", KINDS)
async def test_a_tool_added_upstream_reaches_clients_of_both_web_processes_without_a_call_first(
    watched: tuple[Topology, dict[str, UpstreamServer]], kind: str
) -> None:
    topology, upstreams = watched
    upstream = upstreams[kind]
    key = "listeners" if kind == "2026-07-28" else "get_streams"
    with anyio.fail_after(TEST_DEADLINE):
        slug = await topology.atenant_create("watch")
        before = (await upstream.stats())[key]
        await topology.amanage("upstream_add", slug, "up", upstream.url)

        async def watching() -> bool:
            return bool((await upstream.stats())[key] > before)

        await eventually(watching, what="the deployment watching the upstream")
        for web in (0, 1):
            async with listening(topology, slug, web=web) as (client, heard):  # type: ignore[arg-type]
                name = f"grown_{secrets.token_hex(3)}"
                started = time.monotonic()
                await upstream.grow(name)
                await heard.both()
                elapsed = time.monotonic() - started
                print(f"\n{kind} upstream, client of web {web}: heard the change {elapsed:.2f} s after it")
                assert f"up_{name}" in {tool.name for tool in (await client.list_tools()).tools}


async def test_one_process_watches_an_upstream_and_another_takes_over_when_it_dies(
    watched: tuple[Topology, dict[str, UpstreamServer]],
) -> None:
    topology, upstreams = watched
    upstream = upstreams["2026-07-28"]
    with anyio.fail_after(TEST_DEADLINE):
        slug = await topology.atenant_create("lease")
        before = await listeners(upstream)
        await topology.amanage("upstream_add", slug, "up", upstream.url)
        await eventually(lambda: listeners_at_least(upstream, before + 1), what="one process watching")
        # A few lease periods later, still one watch: the other web process and the worker do not watch too.
        deadline = time.monotonic() + 6 * WATCH_CHECK_SECONDS
        while time.monotonic() < deadline:
            assert await listeners(upstream) == before + 1
            await anyio.sleep(0.5)
        holders = [
            index
            for index, process in enumerate(topology.web)
            if process is not None and connected_to(process.popen.pid, upstream.port)
        ]
        assert len(holders) == 1, holders
        topology.kill_web(holders[0])
        started = time.monotonic()
        await eventually(
            lambda: connected_to_any(topology, upstream.port), timeout=30, what="another web process taking over"
        )
        await eventually(lambda: listeners_at_least(upstream, before + 1), what="the watch listening again")
        print(f"\nthe watch was taken over {time.monotonic() - started:.2f} s after its holder was killed")
        survivor = 1 - holders[0]
        async with listening(topology, slug, web=survivor) as (_, heard):  # type: ignore[arg-type]
            await upstream.grow(f"after_{secrets.token_hex(3)}")
            await heard.both()
        topology.start_web(holders[0])


async def listeners_at_least(upstream: UpstreamServer, count: int) -> bool:
    return await listeners(upstream) >= count


async def connected_to_any(topology: Topology, port: int) -> bool:
    return any(process is not None and connected_to(process.popen.pid, port) for process in topology.web)
