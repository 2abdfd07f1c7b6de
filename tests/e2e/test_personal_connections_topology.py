"""People's connections across the processes of the production topology (two web processes, the second itself two
server processes, a Celery worker, PostgreSQL, Redis): an expired upstream token that calls on every web process need
at the same moment is refreshed once; a person who connects through one web process is told so on her session's
stream held by the other; a task she started before connecting runs on the worker and completes after."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.e2e.live import PRODUCTION_ONLY, LiveServer
from tests.e2e.personal_connections import (
    TOOL,
    Completions,
    Scene,
    Visitor,
    calls_at_once,
    connect_headless,
    mcp_client,
    scene_create,
    whoami,
)
from tests.e2e.personal_upstreams import PersonalUpstream
from tests.e2e.sdk_tasks import TasksClient

pytestmark = [*PRODUCTION_ONLY, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

TEST_DEADLINE = 120.0
DYNAMIC = {"type": "user_oauth", "client": "dynamic"}
# Calls on web-a (one process) and web-b (two processes behind one port), all at once.
WEBS = [0, 1, 0, 1, 1, 1]


@pytest.fixture
async def scene(live_platform: LiveServer, personal_upstream: PersonalUpstream) -> AsyncIterator[Scene]:
    made = await scene_create(live_platform, personal_upstream, auth=DYNAMIC)
    try:
        yield made
    finally:
        await made.aclose()


def on_web(scene: Scene, link: str, web: int) -> str:
    """``link`` opened through web process ``web`` (a load balancer may send the browser to any of them)."""
    for base in scene.live.web_urls:
        if link.startswith(base):
            return scene.live.web_urls[web] + link.removeprefix(base)
    raise AssertionError(f"{link} is on no web process of the topology")


async def test_an_expired_token_that_every_web_process_needs_at_once_is_refreshed_once(scene: Scene) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        ida = await scene.member("ida")
        connecting = Visitor(lambda url: connect_headless(scene, url, ida))
        async with mcp_client(scene.endpoint(), ida, elicitation_callback=connecting) as client:
            whoami(await client.call_tool(TOOL, {}))
        granted = await scene.upstream_grants(ida)
        await scene.expire(ida)
        answers = await calls_at_once(scene, ida, webs=WEBS)
        after = await scene.upstream_grants(ida)
        refreshed = await scene.credential(ida)

    assert [whoami(answer)["username"] for answer in answers] == [ida.upstream.username] * len(WEBS)
    assert granted == {"grants": 1, "revoked": 0}
    assert after == {"grants": 2, "revoked": 1}, "exactly one refresh reached the upstream"
    assert refreshed is not None and refreshed["status"] == "active" and refreshed["refreshed_at"]


async def test_connecting_through_one_web_process_is_told_on_her_stream_held_by_the_other(scene: Scene) -> None:
    completions = Completions()
    with anyio.fail_after(TEST_DEADLINE):
        jan = await scene.member("jan")
        options = {"mode": "legacy", "elicitation_callback": Visitor(), "message_handler": completions}
        async with mcp_client(scene.endpoint(web=1), jan, **options) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool(TOOL, {})
            (asked,) = raised.value.error.data["elicitations"]
            page = await connect_headless(scene, on_web(scene, asked["url"], 0), jan)
            await completions.completed.wait()
            retried = await client.call_tool(TOOL, {})

    assert asked["url"].startswith(f"{scene.live.web_urls[1]}/connect/")
    assert "Connected" in page
    assert completions.heard == [asked["elicitationId"]]
    assert whoami(retried)["username"] == jan.upstream.username


async def test_a_task_started_before_connecting_runs_on_the_worker_and_completes_after(scene: Scene) -> None:
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        kim = await scene.member("kim")
        connecting = Visitor(lambda url: connect_headless(scene, on_web(scene, url, 0), kim))
        async with mcp_client(
            scene.endpoint(web=1), kim, elicitation_callback=connecting, extensions=[tasks]
        ) as client:
            result = await client.call_tool(TOOL, {})

    assert len(tasks.created) == 1 and "input_required" in tasks.statuses and tasks.statuses[-1] == "completed"
    (asked,) = connecting.asked
    assert asked["mode"] == "url"
    assert whoami(result)["username"] == kim.upstream.username
