"""A tasks extension for the official SDK client, written as an application would with the SDK's extension API.

The SDK (2.3) has no built-in client for the ``io.modelcontextprotocol/tasks`` extension; ``ClientExtension``
lets an application add one: it advertises the extension, claims ``resultType: "task"`` on ``tools/call``, polls
``tasks/get`` at the server's ``pollIntervalMs``, answers ``inputRequests`` through the client's own callbacks and
``tasks/update``, and hands back the call's ``CallToolResult``.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client import ClientRequestContext
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
INPUT_REQUEST: TypeAdapter[types.InputRequest] = TypeAdapter(types.InputRequest)


class TaskIdParams(types.RequestParams):
    task_id: str


class UpdateTaskParams(TaskIdParams):
    input_responses: dict[str, Any]


class GetTaskRequest(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class UpdateTaskRequest(types.Request[UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskParams
    name_param = "taskId"


class CancelTaskRequest(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


class CreatedTask(types.Result):
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class Acknowledgement(types.Result):
    pass


class TasksClient(ClientExtension):
    """Finishes every task-shaped ``tools/call`` result; remembers the tasks it saw."""

    identifier = TASKS_EXTENSION

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []
        self.statuses: list[str] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve)]

    async def _resolve(self, created: CreatedTask, context: ClaimContext) -> types.CallToolResult:
        self.created.append(created)
        session = context.session
        interval = (created.poll_interval_ms or 1000) / 1000
        while True:
            task = await session.send_request(
                GetTaskRequest(params=TaskIdParams(task_id=created.task_id)), DetailedTask
            )
            self.statuses.append(task.status)
            if task.status == "completed" and task.result is not None:
                return types.CallToolResult.model_validate(task.result)
            if task.status == "failed":
                error = task.error or {}
                raise MCPError(int(error.get("code", -32603)), str(error.get("message", "")), error.get("data"))
            if task.status == "cancelled":
                raise MCPError(-32603, f"task {created.task_id} was cancelled")
            if task.status == "input_required" and task.input_requests:
                await self._answer(context, created.task_id, task.input_requests)
                continue
            await anyio.sleep(interval)

    async def _answer(self, context: ClaimContext, task_id: str, questions: dict[str, Any]) -> None:
        session = context.session
        answers: dict[str, Any] = {}
        for key, raw in questions.items():
            question = INPUT_REQUEST.validate_python(raw)
            request_context = ClientRequestContext(session=session, request_id=key, meta=None)
            answer = await session.dispatch_input_request(request_context, question)
            answers[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        update = UpdateTaskRequest(params=UpdateTaskParams(task_id=task_id, input_responses=answers))
        await session.send_request(update, Acknowledgement)
