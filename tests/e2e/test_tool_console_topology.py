"""The tool console across processes (production topology): the run streams from one web process while the page's
answer and cancel POSTs land on another, and a task runs on the separate Celery worker."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx

from tests.e2e.browser import PASSWORD
from tests.e2e.live import PRODUCTION_ONLY, LiveServer
from tests.e2e.tool_console_pages import ConsoleScene, scene_create

pytestmark = PRODUCTION_ONLY

DEADLINE = 30.0


async def signed_in(client: httpx.AsyncClient, base: str, username: str) -> None:
    """Sign in through the admin's login form; the session and CSRF cookies then serve every web process (cookies
    are per host, not per port)."""
    login = await client.get(f"{base}/admin/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
    assert token is not None
    form = {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1), "next": "/admin/"}
    done = await client.post(f"{base}/admin/login/", data=form)
    assert done.status_code == 302, done.text


def csrf(client: httpx.AsyncClient) -> dict[str, str]:
    return {"X-CSRFToken": client.cookies["csrftoken"]}


async def events(response: httpx.Response) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    name = "message"
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            yield name, json.loads(line[6:])
            name = "message"


async def test_an_answer_posted_to_another_web_process_reaches_the_run(live_platform: LiveServer) -> None:
    a, b = live_platform.web_urls[0], live_platform.web_urls[1]
    scene: ConsoleScene = scene_create(live_platform, "http://127.0.0.1:9")
    console = f"/admin/tenants/tool/{scene.asking_tool}/console"
    seen: list[str] = []
    async with httpx.AsyncClient(timeout=DEADLINE) as client:
        await signed_in(client, a, scene.admin)
        body = {"arguments": {}}
        async with client.stream("POST", f"{a}{console}/run/", json=body, headers=csrf(client)) as response:
            assert response.status_code == 200
            run_id = ""
            async for name, data in events(response):
                seen.append(name)
                if name == "run":
                    run_id = data["runId"]
                elif name == "request":
                    answer = {"runId": run_id, "requestId": data["id"], "result": {"action": "accept", "content": {}}}
                    posted = await client.post(f"{b}{console}/answer/", json=answer, headers=csrf(client))
                    assert posted.status_code == 204
                elif name == "outcome":
                    outcome = data
                    break

    assert outcome["outcome"] == "ok"
    assert outcome["result"]["content"][0]["text"] == "Streaming complete: action=accept"
    page_events = [name for name in seen if name != "wire"]  # the raw exchange's messages come between
    assert page_events[:2] == ["run", "notification"] and "answered" in page_events and "wire" in seen


async def test_a_cancel_posted_to_another_web_process_cancels_the_task_on_the_worker(live_platform: LiveServer) -> None:
    a, b = live_platform.web_urls[0], live_platform.web_urls[1]
    scene: ConsoleScene = scene_create(live_platform, "http://127.0.0.1:9")
    console = f"/admin/tenants/tool/{scene.task_tool}/console"
    async with httpx.AsyncClient(timeout=DEADLINE) as client:
        await signed_in(client, b, scene.admin)
        body = {"arguments": {"seconds": 120}, "asTask": True}
        async with client.stream("POST", f"{b}{console}/run/", json=body, headers=csrf(client)) as response:
            assert response.status_code == 200
            run_id = ""
            async for name, data in events(response):
                if name == "run":
                    run_id = data["runId"]
                elif name == "notification" and data["method"] == "notifications/progress":
                    # The worker started the call: it reported its first progress.
                    posted = await client.post(f"{a}{console}/cancel/", json={"runId": run_id}, headers=csrf(client))
                    assert posted.status_code == 204
                elif name == "outcome":
                    outcome = data
                    break

    assert outcome["outcome"] == "cancelled" and outcome["taskId"]
    status = live_platform.manage(
        "shell",
        "-c",
        f"from mcp_platform.jobs.models import ToolRun; print(ToolRun.objects.get(pk={outcome['taskId']!r}).status)",
    )
    assert status.split()[-1] == "cancelled"


async def test_a_page_that_goes_away_cancels_its_task(live_platform: LiveServer) -> None:
    base = live_platform.web_urls[0]
    scene: ConsoleScene = scene_create(live_platform, "http://127.0.0.1:9")
    console = f"/admin/tenants/tool/{scene.task_tool}/console"
    async with httpx.AsyncClient(timeout=DEADLINE) as client:
        await signed_in(client, base, scene.admin)
        body = {"arguments": {"seconds": 120}, "asTask": True}
        async with client.stream("POST", f"{base}{console}/run/", json=body, headers=csrf(client)) as response:
            async for name, data in events(response):
                if name == "task":
                    task_id = data["taskId"]
                    break
    # The stream is closed: the web process cancels the task it was following.
    script = (
        "import time; from mcp_platform.jobs.models import ToolRun; end = time.monotonic() + 20\n"
        f"while ToolRun.objects.get(pk={task_id!r}).status != 'cancelled' and time.monotonic() < end: time.sleep(0.2)\n"
        f"print(ToolRun.objects.get(pk={task_id!r}).status, round(20 - (end - time.monotonic()), 1))"
    )
    status, waited = live_platform.manage("shell", "-c", script).split()[-2:]
    assert status == "cancelled", waited
