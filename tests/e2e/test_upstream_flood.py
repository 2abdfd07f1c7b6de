"""An upstream that floods ``notifications/tools/list_changed`` (every millisecond on its listen stream) costs the
web process a bounded number of catalog refreshes, is disconnected with a clear error when it goes on, ends in
every process when deleted, and never keeps the process from answering other tenants or from stopping on SIGTERM.
CPU time and memory are read from ``/proc`` over a bounded window."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from tests.e2e.live import LiveServer, ManagedProcess, in_tenant
from tests.e2e.test_upstream_federation import eventually, text_of
from tests.e2e.upstreams import UpstreamServer, federation_platform, upstream_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

REQUEST_TIMEOUT = 30.0
TEST_DEADLINE = 150.0
WINDOW_SECONDS = 12.0
MIN_INTERVAL_SECONDS = 1.0
# Another tenant's call on the flooded process answers within this (it takes milliseconds when all is well).
CALM_CALL_SECONDS = 1.0
SIGTERM_SECONDS = 10.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Usage:
    cpu_seconds: float
    rss_mb: float
    at: float

    @classmethod
    def of(cls, pid: int) -> Usage:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
        rss = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS"))
        return cls(cpu, int(rss.split()[1]) / 1024, time.monotonic())


def flooded_platform(tmp: Path, extra_env: dict[str, str]) -> Iterator[tuple[LiveServer, UpstreamServer]]:
    with ExitStack() as stack:
        upstream = upstream_server(stack, tmp / "flood", flood=True)
        env = {"MCP_UPSTREAM_REFRESH_MIN_INTERVAL": str(MIN_INTERVAL_SECONDS), **extra_env}
        yield federation_platform(stack, tmp / "platform", env), upstream


@pytest.fixture
def muting(tmp_path: Path) -> Iterator[tuple[LiveServer, UpstreamServer]]:
    """The production defaults for a flood: more than 60 notifications in 10 s disconnect the upstream."""
    yield from flooded_platform(tmp_path, {})


@pytest.fixture
def tolerant(tmp_path: Path) -> Iterator[tuple[LiveServer, UpstreamServer]]:
    """A flood limit no upstream reaches: only the coalescing of refreshes bounds what the flood costs."""
    yield from flooded_platform(tmp_path, {"MCP_UPSTREAM_LIST_CHANGED_LIMIT": "100000000"})


async def tenants(platform: LiveServer, upstream: UpstreamServer) -> tuple[str, str]:
    """A tenant federating the flooding upstream, and a calm one with a static tool of its own."""
    flooded = await platform.atenant_create("flooded")
    await platform.amanage("upstream_add", flooded, "up", upstream.url)
    calm = await platform.atenant_create(
        "calm",
        "services.tool_create(tenant=tenant, name='hello', description='Hello', "
        "config={'content': [{'type': 'text', 'text': 'hello'}]})",
    )
    return flooded, calm


def client(platform: LiveServer, slug: str) -> Client:
    return Client(platform.endpoint(slug), mode="auto", cache=None, read_timeout_seconds=REQUEST_TIMEOUT)


async def calm_calls_during(platform: LiveServer, calm: str, seconds: float) -> float:
    """Call the calm tenant's tool for ``seconds``; the slowest call's duration."""
    slowest = 0.0
    deadline = time.monotonic() + seconds
    async with client(platform, calm) as connected:
        while time.monotonic() < deadline:
            started = time.monotonic()
            result = await connected.call_tool("hello", {})
            slowest = max(slowest, time.monotonic() - started)
            assert text_of(result) == "hello"
            await anyio.sleep(0.2)
    return slowest


def stops_on_sigterm(process: ManagedProcess) -> float:
    started = time.monotonic()
    process.popen.terminate()
    try:
        process.popen.wait(SIGTERM_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the web process ignored SIGTERM for {SIGTERM_SECONDS}s\n{process.tail()}")
    return time.monotonic() - started


def report(label: str, before: Usage, after: Usage, lists: int, slowest: float) -> float:
    share = (after.cpu_seconds - before.cpu_seconds) / (after.at - before.at)
    print(
        f"\n{label}: web process CPU {share:.0%} of a core over {after.at - before.at:.1f} s, RSS {before.rss_mb:.0f}"
        f" -> {after.rss_mb:.0f} MB, {lists} tools/list upstream, slowest other call {slowest * 1000:.0f} ms"
    )
    return share


async def flood_window(
    platform: LiveServer, upstream: UpstreamServer, calm: str
) -> tuple[Usage, Usage, dict[str, Any], int, float]:
    """The web process's usage before and after ``WINDOW_SECONDS`` of calls to the calm tenant during the flood,
    the upstream's stats at the end, the catalog refreshes it saw in the window, and the slowest calm call."""
    web = platform.processes[0]
    lists_before = (await upstream.stats())["methods"].get("tools/list", 0)
    before = Usage.of(web.popen.pid)
    slowest = await calm_calls_during(platform, calm, WINDOW_SECONDS)
    after = Usage.of(web.popen.pid)
    stats = await upstream.stats()
    return before, after, stats, stats["methods"].get("tools/list", 0) - lists_before, slowest


async def test_a_flooding_upstream_is_disconnected_with_a_clear_error_and_the_process_stays_well(
    muting: tuple[LiveServer, UpstreamServer],
) -> None:
    platform, upstream = muting
    web = platform.processes[0]
    with anyio.fail_after(TEST_DEADLINE):
        flooded, calm = await tenants(platform, upstream)
        async with client(platform, flooded) as connected:
            assert text_of(await connected.call_tool("up_echo", {"text": "hi"})) == "echo: hi"
        before, after, stats, lists, slowest = await flood_window(platform, upstream, calm)
        share = report("flood, muted", before, after, lists, slowest)

        # Disconnected, and not listened to again during the cool-down.
        assert stats["listeners"] == 0, stats
        assert stats["published"] < 1000, stats
        error = await platform.amanage(
            "shell",
            "-c",
            in_tenant(
                flooded, "from tenants.models import Upstream; print(Upstream.objects.get(tenant=tenant).last_error)"
            ),
        )
        assert "list_changed notifications in 10 s; disconnected" in error, error
        assert share < 0.25
        assert after.rss_mb - before.rss_mb < 50
        assert lists <= WINDOW_SECONDS / MIN_INTERVAL_SECONDS + 2
        assert slowest < CALM_CALL_SECONDS
        # Calls to the muted upstream still work.
        async with client(platform, flooded) as connected:
            assert text_of(await connected.call_tool("up_echo", {"text": "again"})) == "echo: again"
        assert (await upstream.stats())["listeners"] == 0
    print(f"SIGTERM ended the web process in {stops_on_sigterm(web):.2f} s")


async def test_refreshes_on_a_flood_are_bounded_and_deleting_the_upstream_ends_its_stream(
    tolerant: tuple[LiveServer, UpstreamServer],
) -> None:
    platform, upstream = tolerant
    web = platform.processes[0]
    with anyio.fail_after(TEST_DEADLINE):
        flooded, calm = await tenants(platform, upstream)
        # A second tenant federates the same upstream: its stream must outlive the deletion of the first's.
        other = await platform.atenant_create("other")
        await platform.amanage("upstream_add", other, "up", upstream.url)
        async with client(platform, flooded) as connected:
            assert text_of(await connected.call_tool("up_echo", {"text": "hi"})) == "echo: hi"
        await eventually(lambda: listeners_are(upstream, 2), what="the platform listening for both tenants")
        before, after, stats, lists, slowest = await flood_window(platform, upstream, calm)
        share = report("flood of two upstream rows, coalesced", before, after, lists, slowest)
        assert stats["listeners"] == 2, stats
        # One refresh a second for each of the two rows, however many notifications arrive.
        assert lists <= 2 * (WINDOW_SECONDS / MIN_INTERVAL_SECONDS + 2)
        assert share < 0.9
        assert after.rss_mb - before.rss_mb < 50
        assert slowest < CALM_CALL_SECONDS

        delete = (
            "from tenants.federation.services import upstream_delete; from tenants.models import Upstream; "
            "upstream_delete(upstream=Upstream.objects.get(tenant=tenant))"
        )
        await platform.amanage("shell", "-c", in_tenant(flooded, delete))
        await eventually(lambda: listeners_are(upstream, 1), what="the deleted upstream's listen stream closed")
    # Still flooded through the other tenant's upstream.
    print(f"SIGTERM ended the flooded web process in {stops_on_sigterm(web):.2f} s")


async def listeners_are(upstream: UpstreamServer, count: int) -> bool:
    return bool((await upstream.stats())["listeners"] == count)
