"""Each web process keeps its own copy of a tenant and its catalog: a change committed elsewhere reaches both
through the channel layer, and when that nudge is lost, through the tenant's durable revision once the cache's
TTL has passed."""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx
import pytest

from tests.e2e.live import PRODUCTION_ONLY, TENANT_CACHE_SECONDS, LiveServer, in_tenant
from tests.e2e.raw_http import raw_http_client, stateless_headers, stateless_request

pytestmark = PRODUCTION_ONLY

TEST_DEADLINE = 60.0
# Nothing listens here: a command run with this Redis URL commits its change but its nudge is lost.
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"
LOOKUP_TOOL = "services.tool_create(tenant=tenant, name='lookup', description='v1', config={'content': []})"


async def list_tools(http: httpx.AsyncClient, url: str) -> httpx.Response:
    return await http.post(url, json=stateless_request(1, "tools/list"), headers=stateless_headers("tools/list"))


async def descriptions(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    response = await list_tools(http, url)
    assert response.status_code == 200, response.text
    return {tool["name"]: tool["description"] for tool in response.json()["result"]["tools"]}


async def eventually(check: Any, deadline: float) -> None:
    """Poll ``check()`` until it is true; fail when ``time.monotonic()`` reaches ``deadline`` first."""
    with anyio.fail_after(max(deadline - time.monotonic(), 0.0)):
        # Another process's cache has no event to wait on: poll it, bounded by the deadline.
        while not await check():  # noqa: ASYNC110
            await anyio.sleep(0.2)


def update_tool(slug: str, description: str) -> str:
    return in_tenant(
        slug, f"services.tool_update(tool=tenant.tools.get(name='lookup'), data={{'description': {description!r}}})"
    )


@pytest.mark.parametrize(
    "nudged",
    [
        pytest.param(True, id="the nudge arrives: seen before the TTL runs out"),
        pytest.param(False, id="the nudge is lost: seen after the TTL"),
    ],
)
async def test_a_tool_changed_by_another_process_is_listed_by_both_web_processes(
    live_platform: LiveServer, nudged: bool
) -> None:
    slug = await live_platform.atenant_create("cache", LOOKUP_TOOL)
    urls = [live_platform.endpoint(slug, web=0), live_platform.endpoint(slug, web=1)]
    async with raw_http_client() as http:
        # The web processes cache the tenant after this instant, so their copies stay fresh until at least
        # TTL seconds after it: a change they show before then can only have come through the nudge. Counted from
        # here, not from the update, so a slow ``manage.py`` start cannot stretch the window past the TTL.
        cached_after = time.monotonic()
        for url in urls:
            assert await descriptions(http, url) == {"lookup": "v1"}

        command_env = {} if nudged else {"REDIS_URL": UNREACHABLE_REDIS}
        await live_platform.amanage_with(command_env, "shell", "-c", update_tool(slug, "v2"))

        deadline = cached_after + TENANT_CACHE_SECONDS if nudged else time.monotonic() + TEST_DEADLINE
        for url in urls:
            await eventually(lambda url=url: _has(http, url, "v2"), deadline)


async def test_a_tenant_suspended_while_its_nudge_is_lost_stops_being_served(live_platform: LiveServer) -> None:
    slug = await live_platform.atenant_create("cache", LOOKUP_TOOL)
    url = live_platform.endpoint(slug, web=1)
    suspend = in_tenant(slug, "services.tenant_update(tenant=tenant, data={'status': 'suspended'})")
    async with raw_http_client() as http:
        assert (await list_tools(http, url)).status_code == 200

        await live_platform.amanage_with({"REDIS_URL": UNREACHABLE_REDIS}, "shell", "-c", suspend)

        async def gone() -> bool:
            return (await list_tools(http, url)).status_code == 404

        await eventually(gone, time.monotonic() + TEST_DEADLINE)


async def _has(http: httpx.AsyncClient, url: str, description: str) -> bool:
    return (await descriptions(http, url)).get("lookup") == description
