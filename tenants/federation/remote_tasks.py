"""Upstream tool calls run as the upstream's own tasks: when a platform task (a ``ToolRun`` on a worker) proxies a
call to an upstream that offers tasks, the upstream creates a task and the run follows it with ``tasks/get``,
relaying its status message and its questions, and cancelling it with ``tasks/cancel`` when the run is cancelled.

- 2026-07-28 (tasks extension, declared on these requests only): questions come as the task's ``inputRequests``
  and are answered with ``tasks/update``, each exactly once (the keys sent are recorded on the run).
- 2025-11-25 (the ``tasks`` capability, for tools whose ``execution.taskSupport`` allows it): ``params.task`` on
  ``tools/call``; once the task needs input or ends, ``tasks/result`` carries its questions as server-to-client
  requests (relayed by ``tenants.federation.relay``, answered from the run's answers) and then its result.

The upstream task's id is stored on the run (``TaskRun.record``) before it is followed, so a later start of the
run (after the client answered, or on another worker after this one died) follows the same upstream task instead
of creating another. The run is reached through ``running_task``, which the worker sets around the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from contextvars import ContextVar
from typing import Any, Protocol

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, encode_header_value
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from mcp_types import REQUEST_TIMEOUT as REQUEST_TIMEOUT_CODE

from mcp_core.content import error_result
from mcp_core.context import ToolContext
from mcp_core.errors import McpError
from mcp_core.mrtr import InputRequired
from tenants.federation.relay import current_call

logger = logging.getLogger(__name__)

JSONObject = dict[str, Any]
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RESULT_KEYS = ("content", "structuredContent", "isError")
# Each request to the upstream is bounded; following the task is bounded by the task's own lifetime.
REQUEST_TIMEOUT = 30.0
CANCEL_TIMEOUT = 5.0
# 2025-11-25 ``tasks/result`` waits for the task's end: asked again after this long.
RESULT_TIMEOUT = 120.0
# The upstream suggests how often to poll; kept within these bounds (milliseconds).
POLL_MIN_MS, POLL_MAX_MS, POLL_DEFAULT_MS = 50, 5000, 1000
# Questions of the upstream are asked downstream under their upstream key with this prefix.
KEY_PREFIX = "upstream."


class TaskRun(Protocol):
    """The platform task whose call is being proxied, as a worker runs it (implemented by ``jobs.execution``)."""

    @property
    def upstream_task(self) -> JSONObject | None:
        """What an earlier start recorded: ``{upstream, taskId, answered}``, or None."""
        ...

    async def record(self, upstream_task: JSONObject) -> bool:
        """Store ``upstream_task`` on the run; False when the run is no longer this start's to run."""
        ...

    async def continues(self) -> bool:
        """Whether the run is still unfinished, so a later start carries on (this one is only being stopped)."""
        ...


running_task: ContextVar[TaskRun | None] = ContextVar("running_task", default=None)


def _modern(client: Client) -> bool:
    return client.protocol_version >= "2026"


def upstream_offers_tasks(client: Client, remote: JSONObject) -> bool:
    """Whether the upstream runs this tool (its definition as listed) as a task: it advertises the tasks extension
    (2026-07-28, where it decides per call), or the tasks capability and the tool allows tasks (2025-11-25)."""
    capabilities = client.server_capabilities
    if _modern(client):
        return TASKS_EXTENSION in (capabilities.extensions or {})
    tasks = capabilities.model_dump(by_alias=True, mode="json", exclude_none=True).get("tasks") or {}
    if ((tasks.get("requests") or {}).get("tools") or {}).get("call") is None:
        return False
    return (remote.get("execution") or {}).get("taskSupport") in ("optional", "required")


async def _send(
    client: Client, method: str, params: JSONObject, name: str, *, timeout: float = REQUEST_TIMEOUT
) -> JSONObject:
    """One task request; at 2026-07-28 declaring the tasks extension for itself (the connection's other requests
    do not, so the upstream answers them in the request). Raises ``MCPError``.

    The SDK (2.3) stamps a connection's own capabilities on every request and offers no per-request ones, nor
    requests of the 2025-11-25 task methods: the request is stamped as the SDK would, the extension added, and
    sent through the session's dispatcher.
    """
    session = client.session
    data: JSONObject = {"method": method, "params": dict(params)}
    options: Any = {}
    session._stamp(data, options)
    if _modern(client):
        meta = data["params"]["_meta"]
        capabilities = dict(meta.get(CLIENT_CAPABILITIES_META_KEY) or {})
        capabilities["extensions"] = {**(capabilities.get("extensions") or {}), TASKS_EXTENSION: {}}
        meta[CLIENT_CAPABILITIES_META_KEY] = capabilities
        options.setdefault("headers", {}).setdefault(MCP_NAME_HEADER, encode_header_value(name))
    options["timeout"] = timeout
    raw: JSONObject = await session._dispatcher.send_raw_request(method, data["params"], options)
    return raw


async def _ask(ctx: ToolContext, key: str, request: JSONObject) -> JSONObject:
    """The downstream client's answer to one upstream question (from the run's answers, or ``InputRequired``)."""
    method, params = request.get("method"), request.get("params") or {}
    key = KEY_PREFIX + key
    if method == "elicitation/create":
        if params.get("mode") == "url":
            return await ctx.elicit_url(params["message"], params["url"], params["elicitationId"], key=key)
        return await ctx.elicit(params.get("message", ""), params.get("requestedSchema", {}), key=key)
    if method == "sampling/createMessage":
        extra = {k: v for k, v in params.items() if k not in ("messages", "maxTokens", "_meta")}
        return await ctx.sample(params.get("messages", []), int(params.get("maxTokens", 0)), key=key, **extra)
    if method == "roots/list":
        return {"roots": await ctx.list_roots(key=key)}
    raise McpError(f"the upstream asked {method!r}, which cannot be relayed")


async def _answers(ctx: ToolContext, questions: JSONObject) -> JSONObject:
    # Asked together, so that the downstream client gets every open question in one round.
    keys = list(questions)
    results = await asyncio.gather(*(_ask(ctx, key, questions[key]) for key in keys))
    return dict(zip(keys, results, strict=True))


def _interval(task: JSONObject, fallback: int) -> float:
    value = task.get("pollIntervalMs")
    milliseconds = value if isinstance(value, int) and not isinstance(value, bool) else fallback
    return min(max(milliseconds, POLL_MIN_MS), POLL_MAX_MS) / 1000


def _failed(error: Any) -> McpError:
    error = error if isinstance(error, dict) else {}
    failure = McpError(f"The upstream task failed: {error.get('message', 'no reason given')}", data=error.get("data"))
    if isinstance(error.get("code"), int):
        failure.code = error["code"]
    return failure


async def _create(client: Client, remote: str, arguments: JSONObject, ctx: ToolContext) -> JSONObject:
    """``tools/call`` as a task: the created task (``{resultType: "task", taskId, …}`` in either era), or the
    upstream's result when it answered in the request. Questions it asks in the request (2026-07-28:
    input_required) are answered from the run's answers and the call resent."""
    if not _modern(client):
        result = await _send(client, "tools/call", {"name": remote, "arguments": arguments, "task": {}}, remote)
        task = result.get("task")
        return {**task, "resultType": "task"} if isinstance(task, dict) else result
    params: JSONObject = {"name": remote, "arguments": arguments}
    while True:
        result = await _send(client, "tools/call", params, remote)
        if result.get("resultType") != "input_required":
            return result
        responses = await _answers(ctx, result.get("inputRequests") or {})
        params = {"name": remote, "arguments": arguments, "inputResponses": responses}
        if "requestState" in result:
            params["requestState"] = result["requestState"]


async def call_as_task(
    client: Client, *, upstream_id: int, remote: str, arguments: JSONObject, ctx: ToolContext, run: TaskRun
) -> JSONObject:
    """The result of ``remote`` called as a task of the upstream (or answered in the request, if the upstream
    chose to). Raises ``MCPError`` (the upstream's), ``McpError`` (the upstream task failed) and ``InputRequired``
    (the downstream client must answer first: the upstream task waits, and the next start follows it again)."""
    followed = run.upstream_task
    if followed is None or followed.get("upstream") != upstream_id:
        created = await _create(client, remote, arguments, ctx)
        if created.get("resultType") != "task":
            return {key: created[key] for key in RESULT_KEYS if key in created}
        followed = {"upstream": upstream_id, "taskId": created["taskId"], "answered": []}
        if not await run.record(followed):
            await _cancel(client, created["taskId"])
            raise asyncio.CancelledError()
    task_id = str(followed["taskId"])
    follow = _follow if _modern(client) else _follow_2025
    try:
        return await follow(client, followed, ctx, run)
    except InputRequired:
        raise
    except asyncio.CancelledError:
        # Cancelled, expired: cancel upstream. A worker shutting down: the run's next start follows the task.
        if not await asyncio.shield(run.continues()):
            await _cancel(client, task_id)
        raise
    except BaseException:
        # The run fails with this error: nothing will follow the upstream task any more.
        await _cancel(client, task_id)
        raise


class _StatusRelay:
    """The upstream task's status message, passed on as progress of the call (a platform task's progress is its
    status message in 2026-07-28, a progress notification on ``tasks/result`` in 2025-11-25) when it changes."""

    def __init__(self, ctx: ToolContext) -> None:
        self._ctx = ctx
        self._told = ""
        self._step = 0

    async def tell(self, message: Any) -> None:
        if not isinstance(message, str) or not message or message == self._told:
            return
        self._told, self._step = message, self._step + 1
        with contextlib.suppress(ValueError):
            await self._ctx.report_progress(self._step, None, message)


async def _follow(client: Client, followed: JSONObject, ctx: ToolContext, run: TaskRun) -> JSONObject:
    task_id = str(followed["taskId"])
    answered: list[str] = list(followed.get("answered") or [])
    status_relay = _StatusRelay(ctx)
    while True:
        task = await _send(client, "tasks/get", {"taskId": task_id}, task_id)
        status = task.get("status")
        if status == "completed":
            result = task.get("result") or {}
            return {key: result[key] for key in RESULT_KEYS if key in result}
        if status == "failed":
            raise _failed(task.get("error"))
        if status == "cancelled":
            return error_result(f"The upstream cancelled its task: {task.get('statusMessage') or 'no reason given'}")
        await status_relay.tell(task.get("statusMessage"))
        questions = task.get("inputRequests") if status == "input_required" else None
        open_questions = {k: v for k, v in (questions or {}).items() if k not in answered}
        if open_questions:
            responses = await _answers(ctx, open_questions)
            await _send(client, "tasks/update", {"taskId": task_id, "inputResponses": responses}, task_id)
            # Recorded once sent: a later start does not send these answers again.
            answered += list(responses)
            if not await run.record({**followed, "answered": answered}):
                raise asyncio.CancelledError()
            continue
        await asyncio.sleep(_interval(task, POLL_DEFAULT_MS))


async def _follow_2025(client: Client, followed: JSONObject, ctx: ToolContext, run: TaskRun) -> JSONObject:
    """2025-11-25: poll until the task needs input or ends, then ``tasks/result``, on whose stream the upstream asks
    its questions (the relay answers them, or ends this start with ``InputRequired``) before the result."""
    task_id = str(followed["taskId"])
    status_relay = _StatusRelay(ctx)
    while True:
        task = await _send(client, "tasks/get", {"taskId": task_id}, task_id)
        status = task.get("status")
        if status == "cancelled":
            return error_result(f"The upstream cancelled its task: {task.get('statusMessage') or 'no reason given'}")
        if status == "working":
            await status_relay.tell(task.get("statusMessage"))
            await asyncio.sleep(_interval({"pollIntervalMs": task.get("pollInterval")}, POLL_DEFAULT_MS))
            continue
        call = current_call()
        if call is not None:
            call.hold_refusal = True
        try:
            result = await _send(client, "tasks/result", {"taskId": task_id}, task_id, timeout=RESULT_TIMEOUT)
        except MCPError as exc:
            if exc.error.code == REQUEST_TIMEOUT_CODE:
                continue  # still waiting for the client or the upstream: ask again how it stands
            raise _failed({"code": exc.error.code, "message": exc.error.message, "data": exc.error.data}) from None
        return {key: result[key] for key in RESULT_KEYS if key in result}


async def _cancel(client: Client, task_id: str) -> None:
    """Ask the upstream to cancel its task; best effort, bounded (the task expires upstream in any case)."""
    try:
        # wait_for, not asyncio.timeout: this runs while the calling task is being cancelled.
        await asyncio.wait_for(_send(client, "tasks/cancel", {"taskId": task_id}, task_id), CANCEL_TIMEOUT)
    except Exception as exc:
        logger.info("cancelling upstream task %s failed: %s", task_id[:8], type(exc).__name__)
