"""Task methods: ``tasks/get``, ``tasks/update``, ``tasks/cancel`` (2026-07-28 extension, gated on the client
declaring it per request) and ``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel`` (2025-11-25).

The handlers speak to the caller's ``TaskStore``; the shell binds it to tenant, principal and era.
"""

from __future__ import annotations

from typing import Any

from mcp_core.env import Env
from mcp_core.errors import ClientRequestFailed, InvalidParams, InvalidRequest, McpError, MethodNotFound
from mcp_core.pagination import decode_cursor, encode_cursor
from mcp_core.tasks import (
    TaskSnapshot,
    TaskStatus,
    TaskStore,
    client_accepts_tasks,
    detailed_task,
    missing_tasks_extension,
    task_fields,
    with_related_task,
)
from mcp_core.versions import V2025_11_25, at_least

JSONObject = dict[str, Any]

# How many questions of one task a tasks/result stream asks the client at most (the tool decides the rest).
MAX_QUESTIONS_PER_ROUND = 32
TASK_STATUS_2025 = "notifications/tasks/status"


def _store(method: str, env: Env) -> TaskStore:
    """The caller's tasks. Raises MethodNotFound where this server or revision has none, and
    MissingClientCapability (2026-07-28) when the request does not declare the tasks extension."""
    if env.tasks is None or not (env.stateless or at_least(env.version, V2025_11_25)):
        raise MethodNotFound(f"Method not found: {method}", data={"method": method})
    if env.stateless and not client_accepts_tasks(env.client_capabilities):
        raise missing_tasks_extension(method)
    return env.tasks


def _task_id(params: JSONObject | None) -> str:
    task_id = (params or {}).get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise InvalidParams("taskId must be a non-empty string")
    return task_id


def _not_found(task_id: str) -> InvalidParams:
    return InvalidParams("Failed to retrieve task: Task not found", data={"taskId": task_id})


async def _task(store: TaskStore, task_id: str) -> TaskSnapshot:
    task = await store.get(task_id)
    if task is None:
        raise _not_found(task_id)
    return task


async def get_task(params: JSONObject | None, env: Env) -> JSONObject:
    """The task; in the stateless era with its result, error or open questions inlined. Raises InvalidParams
    for an unknown task."""
    task = await _task(_store("tasks/get", env), _task_id(params))
    return detailed_task(task) if env.stateless else task_fields(task, stateless=False)


async def update_task(params: JSONObject | None, env: Env) -> JSONObject:
    """2026-07-28: answers to the task's open questions; an empty acknowledgement (answers to keys that are not
    open are ignored). Raises InvalidParams for an unknown task or a malformed answer."""
    store = _store("tasks/update", env)
    task_id = _task_id(params)
    if await store.provide_input(task_id, (params or {}).get("inputResponses", {})) is None:
        raise _not_found(task_id)
    return {}


async def cancel_task(params: JSONObject | None, env: Env) -> JSONObject:
    """Ask the task to stop. 2026-07-28: an empty acknowledgement, also for a finished task. 2025-11-25: the
    cancelled task, and InvalidParams for one that had already finished. Raises InvalidParams when unknown."""
    store = _store("tasks/cancel", env)
    task_id = _task_id(params)
    outcome = await store.cancel(task_id)
    if outcome is None:
        raise _not_found(task_id)
    task, cancelled_now = outcome
    if env.stateless:
        return {}
    if not cancelled_now:
        raise InvalidParams(f"Cannot cancel task: already in terminal status {task.status.value!r}")
    return task_fields(task, stateless=False)


async def list_tasks(params: JSONObject | None, env: Env) -> JSONObject:
    """2025-11-25: the caller's tasks, newest first, a page at a time. Raises InvalidParams for a bad cursor."""
    store = _store("tasks/list", env)
    page = await store.list(after=decode_cursor((params or {}).get("cursor")), limit=env.page_size)
    result: JSONObject = {"tasks": [task_fields(task, stateless=False) for task in page.items]}
    if page.next_key is not None:
        result["nextCursor"] = encode_cursor(page.next_key)
    return result


def _stored_error(error: JSONObject | None) -> McpError:
    error = error or {}
    failure = McpError(str(error.get("message", "Task failed")), data=error.get("data"))
    failure.code = int(error.get("code", failure.code))
    return failure


async def task_result(params: JSONObject | None, env: Env) -> JSONObject:
    """2025-11-25: wait for the task to finish and answer what its call would have answered, tied to the task in
    ``_meta``. Meanwhile the task's questions go to the client as requests on this stream, and its progress and
    log messages and status changes (``notifications/tasks/status``) follow. Raises InvalidParams for an unknown
    task, the call's own JSON-RPC error for a failed one, and InvalidRequest for a cancelled one (it has no
    result)."""
    store = _store("tasks/result", env)
    task_id = _task_id(params)
    async with store.watch(task_id) as watch:
        status = None
        while True:
            task = await _task(store, task_id)
            if status is not None and task.status is not status:
                await env.outbound.notify(TASK_STATUS_2025, task_fields(task, stateless=False))
            status = task.status
            if task.terminal:
                break
            if task.status is TaskStatus.INPUT_REQUIRED:
                await _ask_client(store, task, env)
                continue
            nudge = await watch.next()
            if nudge is not None and nudge.get("kind") == "notification":
                await env.outbound.notify(nudge["method"], with_related_task(nudge["params"], task_id))
    if task.status is TaskStatus.FAILED:
        raise _stored_error(task.error)
    if task.status is TaskStatus.CANCELLED or task.result is None:
        raise InvalidRequest(f"Task {task_id} was cancelled; it has no result")
    return with_related_task(task.result, task_id)


async def _ask_client(store: TaskStore, task: TaskSnapshot, env: Env) -> None:
    """Send the task's open questions to the client and record its answers; a question the client cannot
    answer ends the call as an inline call would end (an isError result)."""
    for key, question in list(task.input_requests.items())[:MAX_QUESTIONS_PER_ROUND]:
        try:
            answer = await env.outbound.request(question["method"], with_related_task(question["params"], task.task_id))
            await store.provide_input(task.task_id, {key: answer})
        except ClientRequestFailed as exc:
            await store.fail_input(task.task_id, f"The tool needed something from the client that failed: {exc}")
            return
        except InvalidParams as exc:
            await store.fail_input(task.task_id, f"The client's answer to {question['method']} is not valid: {exc}")
            return
