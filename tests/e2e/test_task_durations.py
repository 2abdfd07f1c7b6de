"""A tool call that becomes a task is logged with the task's whole run, from its creation to its terminal status,
not the moment it took to queue it: in the activity log (and so the usage dashboard's latency) and on the run."""

from __future__ import annotations

import json
import secrets
import time

import anyio
import mcp_types as types
import pytest
from mcp.client import Client

from tests.e2e.live import LiveServer
from tests.e2e.sdk_tasks import TasksClient

pytestmark = pytest.mark.anyio

REQUEST_TIMEOUT = 30.0
TEST_DEADLINE = 60.0
LOGGED_WITHIN = 20.0

ROWS = """
import json
from mcp_platform.activity.models import ActivityRecord
from mcp_platform.jobs.admin import ToolRunAdmin
from mcp_platform.jobs.models import ToolRun
from django.contrib.admin.sites import site
rows = ActivityRecord.objects.filter(client_name={name!r})
run = ToolRun.objects.get(pk={task_id!r})
print(json.dumps({{
    "rows": list(rows.values("method", "target", "outcome", "duration_ms", "transport", "request_id")),
    "run": (run.finished_at - run.created_at).total_seconds() if run.finished_at else None,
    "admin": ToolRunAdmin(ToolRun, site).duration(run),
}}))
"""


async def test_a_task_is_logged_with_the_time_from_its_creation_to_its_end(live_platform: LiveServer) -> None:
    name = f"durations-{secrets.token_hex(3)}"
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(
            live_platform.endpoint(),
            cache=None,
            read_timeout_seconds=REQUEST_TIMEOUT,
            extensions=[tasks],
            client_info=types.Implementation(name=name, version="1"),
        ) as client:
            await client.call_tool("slow_compute", {"seconds": 1, "label": "timed"})
    (created,) = tasks.created
    assert tasks.statuses[-1] == "completed"

    deadline = time.monotonic() + LOGGED_WITHIN
    while True:
        output = await live_platform.amanage("shell", "-c", ROWS.format(name=name, task_id=created.task_id))
        seen = json.loads(output.strip().splitlines()[-1])
        if seen["rows"] or time.monotonic() > deadline:
            break
        await anyio.sleep(0.5)
    (row,) = seen["rows"]
    assert (row["method"], row["target"], row["outcome"], row["transport"]) == (
        "tools/call",
        "slow_compute",
        "ok",
        "streamable-http",
    )
    assert row["request_id"] != ""
    assert 1000 <= row["duration_ms"] < 20_000, row
    assert 1.0 <= seen["run"] < 20.0, seen
    assert seen["admin"].endswith(" s"), seen
