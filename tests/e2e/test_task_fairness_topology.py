"""One tenant's slow tasks do not hold every worker: in the production topology (a Celery worker process with four
threads), a tenant's HTTP tool calls to an API that drips its body run at most ``TASK_MAX_RUNNING_PER_TENANT`` (by
default half the worker's threads) at a time, the rest stay queued and working, and another tenant's quick task
is run at once."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from contextlib import ExitStack

import anyio
import httpx
import pytest

from tests.e2e.live import PRODUCTION_ONLY, LiveServer
from tests.e2e.raw_http import messages, raw_http_client, sse_events
from tests.e2e.test_tasks_topology import WORKER_THREADS, listen, stateless
from tests.rest_api import RestApi, start_rest_api

pytestmark = PRODUCTION_ONLY

TEST_DEADLINE = 90.0
# One byte every 2 s, six of them: each call takes 12 s, every read well within the tool's timeout.
DRIP_SECONDS, DRIP_BYTES = 2, 6


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestApi]:
    with ExitStack() as stack:
        yield start_rest_api(stack, tmp_path_factory.mktemp("rest-api"))


async def tenant_with_task_tool(live: LiveServer, name: str, url: str) -> str:
    """A new tenant that may reach loopback, with one HTTP tool that always runs as a task; its endpoint."""
    slug = f"{name}-{secrets.token_hex(4)}"
    await live.amanage(
        "shell",
        "-c",
        f"from tenants import services; tenant = services.tenant_create(slug={slug!r}, name={name!r}); "
        "services.tenant_update(tenant=tenant, data={'outbound_allowed_networks': ['127.0.0.1/32']}); "
        f"services.tool_create(tenant=tenant, name={name!r}, backend='http', config={{'url': {url!r}, 'timeout': 60}}, "
        "input_schema={'type': 'object'}, task_support='required')",
    )
    return live.endpoint(slug)


async def start(http: httpx.AsyncClient, url: str, name: str) -> str:
    created = await stateless(http, url, "tools/call", {"name": name, "arguments": {}})
    assert created["resultType"] == "task", created
    return str(created["taskId"])


async def until_completed(http: httpx.AsyncClient, url: str, task_ids: list[str]) -> None:
    """Follow ``task_ids`` until each has completed (a failure fails the test)."""
    waiting = set(task_ids)
    async with listen(http, url, task_ids) as stream:
        async for message in messages(sse_events(stream)):
            if message.get("method") != "notifications/tasks":
                continue
            status = message["params"]["status"]
            assert status in ("working", "completed"), message
            if status == "completed":
                waiting.discard(message["params"]["taskId"])
                if not waiting:
                    return


async def test_another_tenants_task_runs_at_once_while_one_tenants_slow_tasks_wait_their_turn(
    live_platform: LiveServer, api: RestApi
) -> None:
    key = secrets.token_hex(4)
    drip = f"{api.base}/drip?every={DRIP_SECONDS}&n={DRIP_BYTES}&key={key}"
    slow_url = await tenant_with_task_tool(live_platform, "slow", drip)
    quick_url = await tenant_with_task_tool(live_platform, "quick", f"{api.base}/pets/7")
    async with raw_http_client() as http:
        with anyio.fail_after(TEST_DEADLINE):
            slow = [await start(http, slow_url, "slow") for _ in range(WORKER_THREADS)]
            # The first of the slow tenant's calls are dripping: the worker is busy with them.
            await http.get(f"{api.base}/drip/stats", params={"key": key, "open_at_least": 2})
            started = time.monotonic()
            quick = await start(http, quick_url, "quick")
            await until_completed(http, quick_url, [quick])
            latency = time.monotonic() - started
            during = (await http.get(f"{api.base}/drip/stats", params={"key": key})).json()
            statuses = [(await stateless(http, slow_url, "tasks/get", {"taskId": t}))["status"] for t in slow]
            # Those over the limit waited their turn: none failed, none was lost.
            await until_completed(http, slow_url, slow)
            stats = (await http.get(f"{api.base}/drip/stats", params={"key": key})).json()
    assert latency < DRIP_SECONDS * DRIP_BYTES / 2, latency
    assert statuses == ["working"] * WORKER_THREADS
    assert during["done"] == 0, during
    assert stats == {"open": 0, "peak": WORKER_THREADS // 2, "done": WORKER_THREADS}
