"""The observation seam: what is known when an MCP request starts (``CallInfo``), how it ended (``CallRecord``),
the hooks that watch calls, and ``observed_call``, the one context manager the gateway wraps around dispatch.

Hooks are registered once per process (from ``AppConfig.ready``); they never raise and never block (they buffer).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final, NamedTuple, Protocol

from mcp_core.errors import error_to_wire

logger = logging.getLogger(__name__)

OK: Final = "ok"
TOOL_ERROR: Final = "tool_error"
ERROR: Final = "error"
RATE_LIMITED: Final = "rate_limited"
CANCELLED: Final = "cancelled"
OUTCOMES: Final = (OK, TOOL_ERROR, ERROR, RATE_LIMITED, CANCELLED)

STREAMABLE_HTTP: Final = "streamable-http"
HTTP_SSE: Final = "http+sse"
# A run started from a tool's page in the admin (``mcp_platform.console``).
ADMIN_CONSOLE: Final = "admin-console"


# Records, not frozen dataclasses: both are built on every request, and a frozen dataclass sets each field through
# object.__setattr__ (CallInfo in 5.2 us here, as a NamedTuple in 0.5 us).
class CallInfo(NamedTuple):
    """What is known when a request starts. ``target`` is the tool name, resource URI or prompt name (None for
    other methods); ``principal`` the user id ("" for a machine client or anonymous caller); ``client_id`` the
    OAuth client id ("" when anonymous); ``headers`` the request's headers, names lower-cased; ``arguments`` the
    call's arguments where the tenant keeps them in its activity log, else None; ``server`` the slug of the tenant's
    named server the request went to ("" for its default server)."""

    tenant_id: int
    tenant_slug: str
    method: str
    target: str | None
    principal: str
    client_id: str
    client_name: str
    client_version: str
    protocol_version: str
    transport: str
    request_id: str
    started: float
    started_at: float
    arguments: dict[str, Any] | None
    headers: Mapping[str, str] | None
    server: str = ""


class CallRecord(NamedTuple):
    """How a call ended: ``outcome`` is one of ``OUTCOMES``; ``error_code`` the JSON-RPC code of an error;
    ``task_id`` the task the call became (its answer was the task, not the tool's result), else None."""

    info: CallInfo
    duration_s: float
    outcome: str
    error_code: int | None
    task_id: str | None = None


class CallHook(Protocol):
    def started(self, info: CallInfo) -> object:
        """A call begins; the returned token (a span, say, or None) comes back to ``finished``."""
        ...

    def finished(self, record: CallRecord, token: object) -> None:
        """A call ended (answered, failed, refused or cancelled)."""
        ...


# Configuration fixed at start-up (like Django's signal receivers), not state: the same in every process.
_hooks: list[CallHook] = []


def register_hook(hook: CallHook) -> None:
    """Watch every call of this process from now on; registering the same hook twice has no effect."""
    if hook not in _hooks:
        _hooks.append(hook)


def unregister_hook(hook: CallHook) -> None:
    """Stop watching calls with ``hook`` (tests, and a hook that is switched off)."""
    if hook in _hooks:
        _hooks.remove(hook)


def hooks_registered() -> bool:
    """Whether any hook watches calls: a caller may skip building a ``CallInfo`` when none does."""
    return bool(_hooks)


def created_task(result: object) -> str | None:
    """The id of the task a call's ``result`` announces (``resultType: "task"`` in 2026-07-28, ``{task}``
    before), or None for any other result."""
    if not isinstance(result, Mapping):
        return None
    task = result if result.get("resultType") == "task" else result.get("task")
    task_id = task.get("taskId") if isinstance(task, Mapping) else None
    return task_id if isinstance(task_id, str) else None


def classify(*, result: object = None, error: BaseException | None = None) -> tuple[str, int | None]:
    """The outcome and JSON-RPC error code of a call that returned ``result`` or raised ``error``."""
    if error is None:
        if isinstance(result, Mapping) and result.get("isError") is True:
            return TOOL_ERROR, None
        return OK, None
    if isinstance(error, (KeyboardInterrupt, SystemExit)):
        return ERROR, None
    if isinstance(error, BaseException) and not isinstance(error, Exception):
        # asyncio.CancelledError (a BaseException); this module stays free of asyncio like mcp_core.
        return CANCELLED, None
    code = error_to_wire(error)[1].get("code")
    code = code if isinstance(code, int) else None
    if getattr(error, "http_status", None) == 429:
        return RATE_LIMITED, code
    return ERROR, code


class ObservedCall:
    """One observed call: the caller reports its result (``succeed``) or failure (``fail``); an exception that
    leaves the ``with`` block is reported by itself. Usable with ``with`` and ``async with``."""

    __slots__ = ("_error", "_finished", "_result", "_tokens", "info")

    def __init__(self, info: CallInfo) -> None:
        self.info = info
        self._tokens: list[tuple[CallHook, object]] = []
        self._result: object = None
        self._error: BaseException | None = None
        self._finished = False

    def succeed(self, result: object) -> None:
        self._result = result
        self._error = None

    def fail(self, error: BaseException) -> None:
        self._error = error

    def __enter__(self) -> ObservedCall:
        for hook in tuple(_hooks):
            try:
                self._tokens.append((hook, hook.started(self.info)))
            except Exception:
                logger.exception("call hook %r failed to start", hook)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._finished or not self._tokens:
            return
        self._finished = True
        error = exc if exc is not None else self._error
        outcome, code = classify(result=self._result, error=error)
        record = CallRecord(
            info=self.info,
            duration_s=time.perf_counter() - self.info.started,
            outcome=outcome,
            error_code=code,
            task_id=created_task(self._result) if error is None else None,
        )
        for hook, token in self._tokens:
            try:
                hook.finished(record, token)
            except Exception:
                logger.exception("call hook %r failed to finish", hook)

    async def __aenter__(self) -> ObservedCall:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)


def observed_call(info: CallInfo) -> ObservedCall:
    """Watch one call with every registered hook: ``async with observed_call(info) as call: ... call.succeed(r)``.

    With no hook registered it only creates the object."""
    return ObservedCall(info)
