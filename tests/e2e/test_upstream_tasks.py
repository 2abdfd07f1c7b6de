"""Upstream tools called as the upstream's own tasks, end to end: a platform process whose ``conformance`` tenant
(task tools, in both eras) is the upstream of another tenant; a downstream client calls the mirrored tools as
tasks (2026-07-28 with the tasks extension, 2025-11-25 with ``params.task``), and the platform's run follows the
upstream's task to its end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client, ClientRequestContext
from mcp.shared.exceptions import MCPError

from tests.e2e.live import LiveServer, in_tenant
from tests.e2e.raw_http import RawSession, raw_http_client, request_message, sse_events
from tests.e2e.sdk_tasks import (
    Acknowledgement,
    CancelTaskRequest,
    CreatedTask,
    DetailedTask,
    GetTaskRequest,
    TaskIdParams,
    TasksClient,
)
from tests.e2e.test_upstream_federation import eventually, text_of
from tests.e2e.upstreams import federation_platform

pytestmark = pytest.mark.anyio

REQUEST_TIMEOUT = 30.0
TEST_DEADLINE = 90.0
TASK_TOOLS = ("conf_slow_compute", "conf_confirm_delete", "conf_failing_job", "conf_protocol_error_job")


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with ExitStack() as stack:
        live = federation_platform(stack, tmp_path_factory.mktemp("upstream-tasks"))
        live.manage("load_conformance_tenant")
        yield live


async def federated_tenant(platform: LiveServer, url: str, negotiated: str) -> str:
    """A tenant with the platform's own conformance tenant as upstream ``conf`` (at ``url``), its task tools run
    as tasks."""
    slug = await platform.atenant_create("tasks")
    output = await platform.amanage("upstream_add", slug, "conf", url)
    assert negotiated in output, output
    required = "; ".join(
        f"services.tool_update(tool=tenant.tools.get(name={name!r}), data={{'task_support': 'required'}})"
        for name in TASK_TOOLS
    )
    await platform.amanage("shell", "-c", in_tenant(slug, required))
    return slug


@pytest.fixture
async def tenant(platform: LiveServer) -> str:
    """The upstream over Streamable HTTP at 2026-07-28: tasks through the tasks extension."""
    return await federated_tenant(platform, platform.endpoint("conformance"), "(streamable-http, 2026-07-28)")


@pytest.fixture
async def tenant_2025(platform: LiveServer) -> str:
    """The upstream over its 2024-11-05 HTTP+SSE endpoint, where it negotiates 2025-11-25: core tasks."""
    return await federated_tenant(platform, platform.sse_endpoint("conformance"), "(sse, 2025-11-25)")


def tasks_client(platform: LiveServer, slug: str, tasks: TasksClient, **options: Any) -> Client:
    return Client(
        platform.endpoint(slug), cache=None, read_timeout_seconds=REQUEST_TIMEOUT, extensions=[tasks], **options
    )


async def runs_of(platform: LiveServer, slug: str) -> list[dict[str, Any]]:
    """The tenant's tool runs, newest first, as the database holds them."""
    script = in_tenant(
        slug,
        "import json; print(json.dumps(list(tenant.tool_runs.values("
        "'id', 'tool_name', 'status', 'status_message', 'upstream_task', 'input_answers'))))",
    )
    output = await platform.amanage("shell", "-c", script)
    runs: list[dict[str, Any]] = json.loads(output.strip().splitlines()[-1])
    return runs


async def upstream_run(platform: LiveServer, slug: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tenant's latest run and the conformance tenant's run it followed."""
    (run, *_) = await runs_of(platform, slug)
    assert run["upstream_task"], run
    followed = {r["id"]: r for r in await runs_of(platform, "conformance")}[run["upstream_task"]["taskId"]]
    return run, followed


async def test_a_task_call_of_an_upstream_tool_follows_the_upstreams_own_task(
    platform: LiveServer, tenant: str
) -> None:
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        async with tasks_client(platform, tenant, tasks) as client:
            created = await client.session.call_tool(
                "conf_slow_compute", {"seconds": 3, "label": "upstream"}, allow_claimed=True
            )
            assert isinstance(created, CreatedTask), created

            async def get() -> DetailedTask:
                request = GetTaskRequest(params=TaskIdParams(task_id=created.task_id))
                return await client.session.send_request(request, DetailedTask)

            # The upstream task's status message becomes the downstream task's.
            await eventually(
                lambda: _status_message_is(get, "Computing upstream"), what="the upstream's status message downstream"
            )
            done = await eventually(lambda: _finished(get), what="the task to finish")
    assert done.status == "completed" and done.result is not None
    assert text_of(types.CallToolResult.model_validate(done.result)) == "Computed upstream after 3 second(s)"
    run, followed = await upstream_run(platform, tenant)
    assert run["tool_name"] == "conf_slow_compute" and run["upstream_task"]["upstream"]
    assert followed["tool_name"] == "slow_compute" and followed["status"] == "completed"


async def _status_message_is(get: Any, message: str) -> bool:
    task = await get()
    return bool(task.status_message == message)


async def _finished(get: Any) -> DetailedTask | None:
    task = await get()
    return task if task.status in ("completed", "failed", "cancelled") else None


async def test_the_upstream_tasks_question_is_answered_once_by_the_downstream_client(
    platform: LiveServer, tenant: str
) -> None:
    tasks = TasksClient()
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    with anyio.fail_after(TEST_DEADLINE):
        async with tasks_client(platform, tenant, tasks, elicitation_callback=elicit) as client:
            result = await client.call_tool("conf_confirm_delete", {"filename": "notes.txt"})
    assert text_of(result) == "Deleted notes.txt"
    assert asked == ["Delete notes.txt?"]
    assert "input_required" in tasks.statuses and tasks.statuses[-1] == "completed"
    run, followed = await upstream_run(platform, tenant)
    # The downstream answer was asked under the upstream's key and sent upstream exactly once.
    assert list(run["input_answers"]) == ["upstream.confirm_delete"]
    assert run["upstream_task"]["answered"] == ["confirm_delete"]
    assert list(followed["input_answers"]) == ["confirm_delete"] and followed["status"] == "completed"


async def test_cancelling_the_downstream_task_cancels_the_upstream_task(platform: LiveServer, tenant: str) -> None:
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        async with tasks_client(platform, tenant, tasks) as client:
            created = await client.session.call_tool(
                "conf_slow_compute", {"seconds": 300, "label": "cancelled"}, allow_claimed=True
            )
            assert isinstance(created, CreatedTask), created

            async def get() -> DetailedTask:
                request = GetTaskRequest(params=TaskIdParams(task_id=created.task_id))
                return await client.session.send_request(request, DetailedTask)

            await eventually(lambda: _status_message_is(get, "Computing cancelled"), what="the upstream task")
            cancel = CancelTaskRequest(params=TaskIdParams(task_id=created.task_id))
            await client.session.send_request(cancel, Acknowledgement)

            async def upstream_cancelled() -> bool:
                _run, followed = await upstream_run(platform, tenant)
                return bool(followed["status"] == "cancelled")

            await eventually(upstream_cancelled, what="the upstream task's cancellation")
            assert (await get()).status == "cancelled"


async def test_an_upstream_tasks_tool_error_and_protocol_error_reach_the_downstream_task(
    platform: LiveServer, tenant: str
) -> None:
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        async with tasks_client(platform, tenant, tasks) as client:
            failed = await client.call_tool("conf_failing_job", {})
            assert failed.is_error and "the input data could not be processed" in text_of(failed)
            with pytest.raises(MCPError) as raised:
                await client.call_tool("conf_protocol_error_job", {})
    assert raised.value.error.code == -32603
    assert "The job hit an internal error" in raised.value.error.message


async def test_a_2025_11_25_task_call_asks_the_upstream_tasks_question_on_its_tasks_result_stream(
    platform: LiveServer, tenant: str
) -> None:
    related = "io.modelcontextprotocol/related-task"
    async with raw_http_client() as http:
        session = RawSession(http, platform.endpoint(tenant))
        with anyio.fail_after(TEST_DEADLINE):
            await session.initialize(capabilities={"elicitation": {"form": {}}})
            created = await session.call(
                "tools/call", {"name": "conf_confirm_delete", "arguments": {"filename": "old.txt"}, "task": {}}
            )
            task_id = created["result"]["task"]["taskId"]
            result_id = session.next_id()
            questions = []
            async with session.stream_post(request_message(result_id, "tasks/result", {"taskId": task_id})) as stream:
                async for event in sse_events(stream):
                    message = event.message()
                    if message is None:
                        continue
                    if message.get("method") == "elicitation/create":
                        questions.append(message)
                        answer = {"action": "accept", "content": {"confirm": True}}
                        posted = await session.post({"jsonrpc": "2.0", "id": message["id"], "result": answer})
                        assert posted.status_code == 202, posted.text
                    elif message.get("id") == result_id:
                        break
    (question,) = questions
    assert question["params"]["message"] == "Delete old.txt?"
    assert question["params"]["_meta"][related] == {"taskId": task_id}
    assert message["result"]["content"] == [{"type": "text", "text": "Deleted old.txt"}]
    run, followed = await upstream_run(platform, tenant)
    assert run["upstream_task"]["answered"] == ["confirm_delete"]
    assert list(followed["input_answers"]) == ["confirm_delete"] and followed["status"] == "completed"


async def test_a_2025_11_25_upstreams_task_is_followed_and_its_question_answered_once(
    platform: LiveServer, tenant_2025: str
) -> None:
    tasks = TasksClient()
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    with anyio.fail_after(TEST_DEADLINE):
        async with tasks_client(platform, tenant_2025, tasks, elicitation_callback=elicit) as client:
            computed = await client.call_tool("conf_slow_compute", {"seconds": 1, "label": "old"})
            _run, computing = await upstream_run(platform, tenant_2025)
            deleted = await client.call_tool("conf_confirm_delete", {"filename": "old.txt"})
    assert text_of(computed) == "Computed old after 1 second(s)"
    assert computing["tool_name"] == "slow_compute" and computing["status"] == "completed"
    assert text_of(deleted) == "Deleted old.txt"
    assert asked == ["Delete old.txt?"]
    _run, followed = await upstream_run(platform, tenant_2025)
    assert followed["tool_name"] == "confirm_delete" and followed["status"] == "completed"
    assert len(followed["input_answers"]) == 1, followed


async def test_cancelling_the_downstream_task_cancels_the_2025_11_25_upstreams_task(
    platform: LiveServer, tenant_2025: str
) -> None:
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        async with tasks_client(platform, tenant_2025, tasks) as client:
            created = await client.session.call_tool(
                "conf_slow_compute", {"seconds": 300, "label": "old-cancelled"}, allow_claimed=True
            )
            assert isinstance(created, CreatedTask), created

            async def upstream_status() -> str:
                runs = await runs_of(platform, tenant_2025)
                if not runs or not runs[0]["upstream_task"]:
                    return ""
                _run, followed = await upstream_run(platform, tenant_2025)
                return str(followed["status"])

            await eventually(lambda: _is(upstream_status, "working"), what="the upstream task")
            cancel = CancelTaskRequest(params=TaskIdParams(task_id=created.task_id))
            await client.session.send_request(cancel, Acknowledgement)
            await eventually(lambda: _is(upstream_status, "cancelled"), what="the upstream task's cancellation")


async def _is(read: Any, expected: str) -> bool:
    return bool(await read() == expected)
