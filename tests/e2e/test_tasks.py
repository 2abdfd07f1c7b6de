"""Tasks with the official SDK client against a live server (embedded, or the production topology): the
client declares the tasks extension, the server answers long calls with tasks that its Celery worker runs, and
the client's extension polls them to their result, answering their questions on the way.

The SDK has no tasks client of its own; ``tests/e2e/sdk_tasks.py`` adds one through the SDK's extension API.
Polling follows the server's ``pollIntervalMs``, as the extension's clients should.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client, ClientRequestContext
from mcp.shared.exceptions import MCPError

from tests.e2e.sdk_tasks import TasksClient

pytestmark = pytest.mark.anyio

REQUEST_TIMEOUT = 30.0
TEST_DEADLINE = 60.0


def tasks_client(url: str, tasks: TasksClient, **options: Any) -> Client:
    return Client(url, cache=None, read_timeout_seconds=REQUEST_TIMEOUT, extensions=[tasks], **options)


def only_text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent), block
    return block.text


async def test_a_long_call_becomes_a_task_the_worker_runs_to_its_result(conformance_url: str) -> None:
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        async with tasks_client(conformance_url, tasks) as client:
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("slow_compute", {"seconds": 1, "label": "e2e"})
            quick = await client.call_tool("greet", {"name": "Ada"})
    assert only_text(result) == "Computed e2e after 1 second(s)"
    assert only_text(quick) == "Hello, Ada!"
    (created,) = tasks.created  # greet never runs as a task
    assert created.status == "working" and created.ttl_ms == 3_600_000
    assert tasks.statuses[-1] == "completed"


async def test_a_task_question_is_answered_through_the_clients_elicitation_callback(conformance_url: str) -> None:
    tasks = TasksClient()
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    with anyio.fail_after(TEST_DEADLINE):
        async with tasks_client(conformance_url, tasks, elicitation_callback=elicit) as client:
            result = await client.call_tool("confirm_delete", {"filename": "report.txt"})
    assert only_text(result) == "Deleted report.txt"
    assert asked == ["Delete report.txt?"]
    assert "input_required" in tasks.statuses


async def test_a_tool_asks_in_the_request_then_continues_as_a_task(conformance_url: str) -> None:
    tasks = TasksClient()
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    with anyio.fail_after(TEST_DEADLINE):
        async with tasks_client(conformance_url, tasks, elicitation_callback=elicit) as client:
            result = await client.call_tool("test_tool_with_task", {})
    assert only_text(result) == "Hello, Grace! Your task has finished."
    # Asked once, in the request (MRTR); the task replays the answer instead of asking again.
    assert asked == ["What is your name?"]
    assert len(tasks.created) == 1 and "input_required" not in tasks.statuses


async def test_a_protocol_error_inside_a_task_reaches_the_client_as_that_error(conformance_url: str) -> None:
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        async with tasks_client(conformance_url, tasks) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("protocol_error_job", {})
    assert caught.value.code == -32603
    assert tasks.statuses[-1] == "failed"


async def test_a_client_without_the_extension_gets_answers_inline_or_a_clear_refusal(conformance_url: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(conformance_url, cache=None, read_timeout_seconds=REQUEST_TIMEOUT) as client:
            inline = await client.call_tool("slow_compute", {"seconds": 0})
            with pytest.raises(MCPError) as refused:
                await client.call_tool("failing_job", {})
    assert only_text(inline) == "Computed result after 0 second(s)"
    assert refused.value.code == -32021
