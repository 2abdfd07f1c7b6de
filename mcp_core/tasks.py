"""Tasks: the task state machine, a task's wire shapes in each era, and when a ``tools/call`` becomes a task.

Everything that affects task status transitions lives here (the h11 habit): the shell stores a task durably,
asks ``next_status`` what an event does to it, and writes the answer with a compare-and-set. The 2026-07-28
tasks extension (``io.modelcontextprotocol/tasks``) and the 2025-11-25 core tasks share states and transitions;
they differ on the wire (``ttlMs`` and a flat ``CreateTaskResult`` against ``ttl`` and a nested ``task``) and
in who decides that a call becomes a task (the server against the client's ``params.task``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum, StrEnum
from typing import Any, Final, Protocol

from mcp_core.errors import SERVER_ERROR, InvalidParams, McpError, MethodNotFound, MissingClientCapability
from mcp_core.mrtr import Answer, check_answer, input_responses, question_digest
from mcp_core.versions import V2025_11_25, at_least

JSONObject = dict[str, Any]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
RELATED_TASK_KEY: Final = "io.modelcontextprotocol/related-task"


class TaskStatus(StrEnum):
    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL: Final = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})


class TaskEvent(StrEnum):
    # The tool asked the client something it has no answer for yet.
    NEEDS_INPUT = "needs_input"
    # Every open question has an answer: the tool runs again (replaying the answers).
    INPUT_PROVIDED = "input_provided"
    # The call produced a result (a tool result with isError included: that is not a protocol failure).
    COMPLETE = "complete"
    # The call ended in a JSON-RPC error, or the task outlived its TTL.
    FAIL = "fail"
    CANCEL = "cancel"


class TaskStateError(Exception):
    """An event the task's status does not allow (terminal statuses allow none)."""


# (status, event) -> next status. Pairs absent from the table are not allowed; terminal statuses are final.
TRANSITIONS: Final[dict[tuple[TaskStatus, TaskEvent], TaskStatus]] = {
    (TaskStatus.WORKING, TaskEvent.NEEDS_INPUT): TaskStatus.INPUT_REQUIRED,
    (TaskStatus.WORKING, TaskEvent.COMPLETE): TaskStatus.COMPLETED,
    (TaskStatus.WORKING, TaskEvent.FAIL): TaskStatus.FAILED,
    (TaskStatus.WORKING, TaskEvent.CANCEL): TaskStatus.CANCELLED,
    (TaskStatus.INPUT_REQUIRED, TaskEvent.INPUT_PROVIDED): TaskStatus.WORKING,
    # A handshake-era client that cannot answer ends the call the way an inline call ends (an isError result).
    (TaskStatus.INPUT_REQUIRED, TaskEvent.COMPLETE): TaskStatus.COMPLETED,
    (TaskStatus.INPUT_REQUIRED, TaskEvent.FAIL): TaskStatus.FAILED,
    (TaskStatus.INPUT_REQUIRED, TaskEvent.CANCEL): TaskStatus.CANCELLED,
}


def next_status(status: TaskStatus, event: TaskEvent) -> TaskStatus:
    """The status after ``event``. Raises TaskStateError when ``status`` does not allow it."""
    try:
        return TRANSITIONS[(status, event)]
    except KeyError:
        raise TaskStateError(f"{event.value} is not allowed in task status {status.value}") from None


# ---- what a task looks like -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskSnapshot:
    """A task as stored, at one moment. ``input_requests`` are the open questions (key -> request)."""

    task_id: str
    status: TaskStatus
    created_at: datetime
    last_updated_at: datetime
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    status_message: str | None = None
    result: JSONObject | None = None
    error: JSONObject | None = None
    input_requests: dict[str, JSONObject] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


def iso_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with milliseconds and ``Z``: what both eras' ``createdAt``/``lastUpdatedAt`` carry."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_fields(task: TaskSnapshot, *, stateless: bool) -> JSONObject:
    """The ``Task`` object: ``ttlMs``/``pollIntervalMs`` in the stateless era, ``ttl``/``pollInterval`` before."""
    wire: JSONObject = {"taskId": task.task_id, "status": task.status.value}
    if task.status_message:
        wire["statusMessage"] = task.status_message
    wire["createdAt"] = iso_timestamp(task.created_at)
    wire["lastUpdatedAt"] = iso_timestamp(task.last_updated_at)
    wire["ttlMs" if stateless else "ttl"] = task.ttl_ms
    if task.poll_interval_ms is not None:
        wire["pollIntervalMs" if stateless else "pollInterval"] = task.poll_interval_ms
    return wire


def detailed_task(task: TaskSnapshot) -> JSONObject:
    """2026-07-28 ``DetailedTask``: the task with its result, error or open questions inlined by status."""
    wire = task_fields(task, stateless=True)
    if task.status is TaskStatus.COMPLETED and task.result is not None:
        wire["result"] = task.result
    elif task.status is TaskStatus.FAILED and task.error is not None:
        wire["error"] = task.error
    elif task.status is TaskStatus.INPUT_REQUIRED:
        wire["inputRequests"] = dict(task.input_requests)
    return wire


def create_task_result(task: TaskSnapshot, *, stateless: bool) -> JSONObject:
    """The answer to a call that became a task: flat with ``resultType: "task"`` (2026-07-28), else ``{task}``."""
    if stateless:
        return {"resultType": "task", **task_fields(task, stateless=True)}
    return {"task": task_fields(task, stateless=False)}


def with_related_task(message: JSONObject, task_id: str) -> JSONObject:
    """2025-11-25: ``message`` (params or a result) tied to its task in ``_meta``, next to the ``_meta`` it has."""
    return {**message, "_meta": {**message.get("_meta", {}), RELATED_TASK_KEY: {"taskId": task_id}}}


# ---- when a call becomes a task -------------------------------------------------------------------------


class TaskSupport(StrEnum):
    """A tool's ``execution.taskSupport``: whether its calls may, must or must not run as tasks."""

    FORBIDDEN = "forbidden"
    OPTIONAL = "optional"
    REQUIRED = "required"


class Execution(Enum):
    # Answer the call in the request.
    INLINE = "inline"
    # Store a task and answer with it now; the call runs in the background.
    TASK = "task"
    # Run in the request until the tool says ``continue_as_task()`` (its questions first, MRTR); then a task.
    INLINE_UNTIL_TASK = "inline_until_task"


class ContinueAsTask(BaseException):
    """Raised by ``ToolContext.continue_as_task`` where the call may become a task from that point on. A
    BaseException, so a tool's ``except Exception`` does not swallow it."""


def client_accepts_tasks(client_capabilities: Mapping[str, Any]) -> bool:
    """2026-07-28: whether the request's capabilities declare the tasks extension."""
    extensions = client_capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def missing_tasks_extension(what: str) -> MissingClientCapability:
    return MissingClientCapability(
        f"{what} needs the client capability extensions[{TASKS_EXTENSION!r}]",
        data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def plan_call(
    *,
    version: str,
    stateless: bool,
    tool: str,
    support: TaskSupport,
    continues_as_task: bool,
    client_capabilities: Mapping[str, Any],
    task_param: Any,
) -> Execution:
    """How to carry out a ``tools/call`` on a server that offers tasks.

    2026-07-28: the server decides; a client that declared the extension gets a task for every call of a tool
    that supports them (after the tool's own questions when it continues as a task by itself). 2025-11-25: the
    client decides with ``params.task``. Raises MissingClientCapability (2026-07-28) or MethodNotFound
    (2025-11-25) for a ``required`` tool called without tasks, MethodNotFound for a task-augmented call of a
    ``forbidden`` tool, and InvalidParams for a ``params.task`` that is not an object.
    """
    if stateless:
        if support is TaskSupport.FORBIDDEN:
            return Execution.INLINE
        if not client_accepts_tasks(client_capabilities):
            if support is TaskSupport.REQUIRED:
                raise missing_tasks_extension(f"Tool {tool} runs only as a task; calling it")
            return Execution.INLINE
        return Execution.INLINE_UNTIL_TASK if continues_as_task else Execution.TASK
    if not at_least(version, V2025_11_25):
        return Execution.INLINE
    if task_param is None:
        if support is TaskSupport.REQUIRED:
            raise MethodNotFound(f"Tool {tool} must be called as a task (params.task)", data={"name": tool})
        return Execution.INLINE
    if not isinstance(task_param, dict):
        raise InvalidParams("params.task must be an object")
    if support is TaskSupport.FORBIDDEN:
        raise MethodNotFound(f"Tool {tool} does not support task execution", data={"name": tool})
    return Execution.TASK


def requested_ttl(task_param: Any) -> int | None:
    """The ``ttl`` (milliseconds) a 2025-11-25 client asked for. Raises InvalidParams when it is no integer >= 1."""
    if not isinstance(task_param, dict) or task_param.get("ttl") is None:
        return None
    ttl = task_param["ttl"]
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl < 1 or int(ttl) != ttl:
        raise InvalidParams("params.task.ttl must be a positive integer (milliseconds)")
    return int(ttl)


# ---- questions a task asks ------------------------------------------------------------------------------


def accept_responses(open_questions: Mapping[str, JSONObject], responses: Any) -> dict[str, Answer]:
    """The answers among a client's ``inputResponses`` to questions still open.

    Keys that are not open (never asked, already answered) are ignored, as the extension says. Raises
    InvalidParams when ``responses`` is not an object or an answer to an open question is malformed.
    """
    accepted: dict[str, Answer] = {}
    for key, result in input_responses(responses, open_keys=open_questions).items():
        question = open_questions[key]
        check_answer(key, question["method"], result)
        accepted[key] = Answer(question_digest(question["method"], question["params"]), result)
    return accepted


@dataclass(frozen=True)
class TaskOutcome:
    """What one run of a task's call came to: a result, a JSON-RPC error, or open questions."""

    event: TaskEvent
    result: JSONObject | None = None
    error: JSONObject | None = None
    # NEEDS_INPUT: the questions left open (key -> request); the answers the task holds stay as they are.
    questions: dict[str, JSONObject] = field(default_factory=dict)


# ---- the seam to the shell ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskRequest:
    """A call that becomes a task, with the facts of the request it came in."""

    tool: str
    arguments: JSONObject
    client_capabilities: JSONObject
    log_level: str | None = None
    progress_token: str | int | None = None
    # 2025-11-25: the lifetime the client asked for (the store may shorten it).
    ttl_ms: int | None = None
    # Questions answered before the call became a task (MRTR rounds of the request).
    answers: dict[str, Answer] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskListPage:
    items: list[TaskSnapshot]
    next_key: str | None = None


class TaskLimitExceeded(McpError):
    """The caller (or the tenant) already has as many unfinished tasks as it may."""

    code = SERVER_ERROR


class TaskWatch(Protocol):
    """Nudges about one task while a request waits on it: ``None`` when ``next`` times out (check the store)."""

    async def __aenter__(self) -> TaskWatch: ...

    async def __aexit__(self, *exc: object) -> None: ...

    async def next(self) -> JSONObject | None:
        """``{"kind": "status"}`` after a change, ``{"kind": "notification", "method", "params"}`` for a
        related message of the running call, or None after a quiet interval."""
        ...


class TaskStore(Protocol):
    """Where one caller's tasks live; the shell binds it to the tenant, principal and era of the request."""

    async def create(self, request: TaskRequest) -> TaskSnapshot:
        """Store a new working task and schedule its run; returns once ``get`` would find it.
        Raises TaskLimitExceeded."""
        ...

    async def get(self, task_id: str) -> TaskSnapshot | None:
        """The task, or None when it is unknown, expired or not the caller's."""
        ...

    async def list(self, *, after: str | None, limit: int) -> TaskListPage: ...

    async def cancel(self, task_id: str) -> tuple[TaskSnapshot, bool] | None:
        """Cancel the task unless it is terminal: the task afterwards and whether this call cancelled it."""
        ...

    async def provide_input(self, task_id: str, responses: Any) -> TaskSnapshot | None:
        """Record the answers to open questions (``accept_responses``); the run resumes once none is left open.
        Raises InvalidParams for malformed answers."""
        ...

    async def fail_input(self, task_id: str, message: str) -> None:
        """The client could not answer (2025-11-25): the call ends with an isError result saying so."""
        ...

    def watch(self, task_id: str) -> TaskWatch: ...
