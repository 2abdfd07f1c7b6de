"""On embedded defaults (SQLite, the in-memory channel layer), a catalog change made by another process (a command:
``manage.py upstream_refresh``, or the services from ``manage.py shell``) reaches the serving process's open
streams, a 2026-07-28 ``subscriptions/listen`` stream and a handshake-era GET stream, within seconds: the serving
process notices the tenant's revision moved."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from contextlib import ExitStack

import anyio
import pytest

from tests.e2e.live import LiveServer, in_tenant
from tests.e2e.test_upstream_watch import listening
from tests.e2e.upstreams import UpstreamServer, federation_platform, upstream_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

TEST_DEADLINE = 90.0


@pytest.fixture(scope="module")
def unwatched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, UpstreamServer]]:
    """An embedded platform that does not watch its upstreams (only commands bring their changes in)."""
    tmp = tmp_path_factory.mktemp("commands")
    with ExitStack() as stack:
        upstream = upstream_server(stack, tmp / "upstream")
        yield federation_platform(stack, tmp / "platform", {"MCP_UPSTREAM_WATCH": "0"}), upstream


async def test_an_upstream_refresh_command_reaches_the_serving_processes_clients(
    unwatched: tuple[LiveServer, UpstreamServer],
) -> None:
    platform, upstream = unwatched
    with anyio.fail_after(TEST_DEADLINE):
        slug = await platform.atenant_create("cmd")
        await platform.amanage("upstream_add", slug, "up", upstream.url)
        async with listening(platform, slug) as (client, heard):
            name = f"grown_{secrets.token_hex(3)}"
            await upstream.grow(name)
            await platform.amanage("upstream_refresh", slug, "up")
            started = time.monotonic()
            await heard.both()
            print(f"\nupstream_refresh: the clients heard the change {time.monotonic() - started:.2f} s after it ended")
            assert f"up_{name}" in {tool.name for tool in (await client.list_tools()).tools}


async def test_a_tool_created_by_another_process_reaches_the_serving_processes_clients(
    unwatched: tuple[LiveServer, UpstreamServer],
) -> None:
    platform, _ = unwatched
    with anyio.fail_after(TEST_DEADLINE):
        slug = await platform.atenant_create("cmd")
        async with listening(platform, slug) as (client, heard):
            create = "services.tool_create(tenant=tenant, name='late', config={'content': []})"
            await platform.amanage("shell", "-c", in_tenant(slug, create))
            started = time.monotonic()
            await heard.both()
            print(f"\nmanage.py shell: the clients heard the change {time.monotonic() - started:.2f} s after it ended")
            assert "late" in {tool.name for tool in (await client.list_tools()).tools}
