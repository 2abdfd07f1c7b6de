"""``ToolRunStore``: the ``mcp_core.tasks.TaskStore`` of one caller, on tool runs.

The gateway builds one per request, bound to the caller (tenant, principal, and session in the handshake era);
reads go through the selectors, writes through the services, and waiting on a task listens to its
channel-layer group with a periodic re-read as the backstop.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from mcp_core.tasks import TaskListPage, TaskRequest, TaskSnapshot, TaskStatus
from mcp_infra.conf import platform_settings
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import Inbox
from mcp_platform.jobs import selectors, services
from mcp_platform.jobs.models import RunOrigin, ToolRun
from mcp_platform.jobs.selectors import Caller

JSONObject = dict[str, Any]

# A waiter re-reads the task at least this often, in case a nudge was lost (the channel layer is at-most-once).
WATCH_INTERVAL_SECONDS = 5.0


def task_snapshot(run: ToolRun) -> TaskSnapshot:
    return TaskSnapshot(
        task_id=run.pk,
        status=TaskStatus(run.status),
        created_at=run.created_at,
        last_updated_at=run.updated_at,
        ttl_ms=run.ttl_ms,
        poll_interval_ms=platform_settings.TASK_POLL_INTERVAL_MS,
        status_message=run.status_message or None,
        result=run.result,
        error=run.error,
        input_requests=dict(run.input_requests),
    )


class ToolRunWatch:
    """Hears the task's group while a request waits on it."""

    def __init__(self, tenant_id: int, task_id: str) -> None:
        self._group = groups.task_group(tenant_id, task_id)
        self._inbox = Inbox()

    async def __aenter__(self) -> ToolRunWatch:
        await self._inbox.join(self._group)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._inbox.leave()

    async def next(self) -> JSONObject | None:
        return await self._inbox.next(WATCH_INTERVAL_SECONDS)


class ToolRunStore:
    def __init__(self, caller: Caller, origin: RunOrigin | None = None) -> None:
        self.caller = caller
        self.origin = origin

    @classmethod
    def bound(
        cls,
        *,
        tenant_id: int,
        principal: str,
        session_id: str,
        protocol_version: str,
        client_address: str,
        origin: RunOrigin | None = None,
    ) -> ToolRunStore:
        """The tasks of one caller: a 2026-07-28 request has no session (``session_id=""``); ``client_address``
        is whose allowance an anonymous caller's new tasks use; ``origin`` the request a new run comes from."""
        return cls(Caller(tenant_id, principal, session_id, protocol_version, client_address), origin)

    async def create(self, request: TaskRequest) -> TaskSnapshot:
        run = await sync_to_async(services.tool_run_create)(caller=self.caller, request=request, origin=self.origin)
        return task_snapshot(run)

    async def get(self, task_id: str) -> TaskSnapshot | None:
        run = await selectors.atool_run_get(caller=self.caller, task_id=task_id)
        return None if run is None else task_snapshot(run)

    async def list(self, *, after: str | None, limit: int) -> TaskListPage:
        runs, next_key = await selectors.atool_run_list(caller=self.caller, after=after, limit=limit)
        return TaskListPage([task_snapshot(run) for run in runs], next_key)

    async def cancel(self, task_id: str) -> tuple[TaskSnapshot, bool] | None:
        outcome = await sync_to_async(services.tool_run_cancel)(caller=self.caller, task_id=task_id)
        return None if outcome is None else (task_snapshot(outcome[0]), outcome[1])

    async def provide_input(self, task_id: str, responses: Any) -> TaskSnapshot | None:
        run = await sync_to_async(services.tool_run_provide_input)(
            caller=self.caller, task_id=task_id, responses=responses
        )
        return None if run is None else task_snapshot(run)

    async def fail_input(self, task_id: str, message: str) -> None:
        await sync_to_async(services.tool_run_fail_input)(caller=self.caller, task_id=task_id, message=message)

    def watch(self, task_id: str) -> ToolRunWatch:
        return ToolRunWatch(self.caller.tenant_id, task_id)
