"""An upstream task followed across a worker's death, in the production topology: the worker following the
upstream's task is killed, the next worker takes the run over and follows the same upstream task (the id stored on
the run) to its result; the upstream never sees a second task.

The upstream is a platform of its own (embedded, its conformance tenant's task tools), so killing the topology's
worker leaves the upstream task running.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client

from tests.e2e.faults import Topology, start_topology
from tests.e2e.live import PRODUCTION_ONLY, LiveServer, in_tenant
from tests.e2e.sdk_tasks import CreatedTask, DetailedTask, GetTaskRequest, TaskIdParams, TasksClient
from tests.e2e.test_upstream_federation import eventually, text_of
from tests.e2e.upstreams import federation_platform

pytestmark = [*PRODUCTION_ONLY, pytest.mark.timeout(300)]

REQUEST_TIMEOUT = 30.0
# The platform's lease and sweep (README, "Tasks"), and what a worker needs to start on a busy machine.
LEASE_SECONDS, SWEEP_SECONDS, WORKER_START_SECONDS = 30.0, 5.0, 20.0
UPSTREAM_SECONDS = 20


@pytest.fixture(scope="module")
def federated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Topology, LiveServer]]:
    tmp = tmp_path_factory.mktemp("upstream-tasks-topology")
    with ExitStack() as stack:
        upstream = federation_platform(stack, tmp / "upstream")
        upstream.manage("load_conformance_tenant")
        extra = {"MCP_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.1/32"}
        yield start_topology(stack, tmp / "topology", web_processes=1, extra_env=extra), upstream


async def json_of(manage: Any, slug: str, expression: str) -> Any:
    output = await manage("shell", "-c", in_tenant(slug, f"import json; print(json.dumps({expression}))"))
    return json.loads(output.strip().splitlines()[-1])


async def test_a_run_following_an_upstream_task_is_taken_over_after_its_worker_dies_and_follows_the_same_task(
    federated: tuple[Topology, LiveServer],
) -> None:
    topology, upstream = federated
    slug = await topology.atenant_create("resume")
    await topology.amanage("upstream_add", slug, "conf", upstream.endpoint("conformance"))
    await topology.amanage(
        "shell",
        "-c",
        in_tenant(
            slug,
            "services.tool_update(tool=tenant.tools.get(name='conf_slow_compute'), data={'task_support': 'required'})",
        ),
    )
    tasks = TasksClient()
    client = Client(topology.endpoint(slug), cache=None, read_timeout_seconds=REQUEST_TIMEOUT, extensions=[tasks])
    deadline = LEASE_SECONDS + SWEEP_SECONDS + WORKER_START_SECONDS + UPSTREAM_SECONDS + 60
    with anyio.fail_after(deadline):
        async with client:
            created = await client.session.call_tool(
                "conf_slow_compute", {"seconds": UPSTREAM_SECONDS, "label": "resumed"}, allow_claimed=True
            )
            assert isinstance(created, CreatedTask), created

            async def get() -> DetailedTask:
                return await client.session.send_request(
                    GetTaskRequest(params=TaskIdParams(task_id=created.task_id)), DetailedTask
                )

            async def following() -> bool:
                return (await get()).status_message == "Computing resumed"

            await eventually(following, what="the run to follow the upstream task")
            topology.kill_worker()
            killed = time.monotonic()
            topology.start_worker()

            async def finished() -> DetailedTask | None:
                task = await get()
                return task if task.status != "working" else None

            done = await eventually(finished, timeout=deadline, what="the taken-over run to finish")
            took = time.monotonic() - killed
    assert done.status == "completed" and done.result is not None, done
    assert (
        text_of(types.CallToolResult.model_validate(done.result))
        == f"Computed resumed after {UPSTREAM_SECONDS} second(s)"
    )
    (run,) = await json_of(topology.amanage, slug, "list(tenant.tool_runs.values('takeovers', 'upstream_task'))")
    assert run["takeovers"] == 1, run
    upstream_runs = await json_of(
        upstream.amanage,
        "conformance",
        "[r.pk for r in tenant.tool_runs.filter(tool_name='slow_compute') if r.arguments.get('label') == 'resumed']",
    )
    assert upstream_runs == [run["upstream_task"]["taskId"]]
    print(f"finished {took:.1f} s after the kill")
