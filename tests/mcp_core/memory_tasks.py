"""An in-memory ``TaskStore``: a complete implementation of the seam, running a task's call when someone waits.

Tasks run cooperatively: ``run`` executes a task's call once (``run_task_call``) and applies the outcome through
the state table, and a ``tasks/result`` watcher runs the task it waits for. Good enough to drive every handler.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from mcp_core.catalog import Catalog
from mcp_core.content import error_result
from mcp_core.env import Env, ServerIdentity
from mcp_core.features.tools import run_task_call
from mcp_core.mrtr import Answer, InputLedger
from mcp_core.tasks import (
    TaskEvent,
    TaskLimitExceeded,
    TaskListPage,
    TaskRequest,
    TaskSnapshot,
    TaskStatus,
    accept_responses,
    next_status,
)
from tests.support import RecordingOutbound

JSONObject = dict[str, Any]
START = datetime(2026, 7, 28, 12, 0, tzinfo=UTC)


@dataclass
class StoredTask:
    snapshot: TaskSnapshot
    request: TaskRequest
    answers: dict[str, Answer] = field(default_factory=dict)
    runs: int = 0


class MemoryWatch:
    def __init__(self, store: MemoryTaskStore, task_id: str) -> None:
        self._store = store
        self._task_id = task_id

    async def __aenter__(self) -> MemoryWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def next(self) -> JSONObject | None:
        await self._store.run(self._task_id)
        return {"kind": "status"}


class MemoryTaskStore:
    def __init__(self, catalog: Catalog, *, version: str, limit: int = 10, ttl_ms: int = 60_000) -> None:
        self.catalog = catalog
        self.version = version
        self.limit = limit
        self.ttl_ms = ttl_ms
        self.tasks: dict[str, StoredTask] = {}
        self.notifications: list[tuple[str, JSONObject]] = []
        self._ids = itertools.count(1)
        self._ticks = itertools.count(1)

    def _now(self) -> datetime:
        return START + timedelta(seconds=next(self._ticks))

    def _change(self, task_id: str, event: TaskEvent, **fields: Any) -> None:
        stored = self.tasks[task_id]
        status = next_status(stored.snapshot.status, event)
        stored.snapshot = replace(stored.snapshot, status=status, last_updated_at=self._now(), **fields)

    async def create(self, request: TaskRequest) -> TaskSnapshot:
        active = sum(1 for t in self.tasks.values() if not t.snapshot.terminal)
        if active >= self.limit:
            raise TaskLimitExceeded(f"At most {self.limit} unfinished tasks")
        task_id = f"task-{next(self._ids)}"
        now = self._now()
        ttl = min(request.ttl_ms or self.ttl_ms, self.ttl_ms)
        snapshot = TaskSnapshot(task_id, TaskStatus.WORKING, now, now, ttl, poll_interval_ms=500)
        self.tasks[task_id] = StoredTask(snapshot, request, dict(request.answers))
        return snapshot

    async def get(self, task_id: str) -> TaskSnapshot | None:
        stored = self.tasks.get(task_id)
        return None if stored is None else stored.snapshot

    async def list(self, *, after: str | None, limit: int) -> TaskListPage:
        ids = sorted(self.tasks, key=lambda i: int(i.split("-")[1]), reverse=True)
        if after is not None:
            ids = ids[ids.index(after) + 1 :] if after in ids else []
        page = ids[:limit]
        return TaskListPage([self.tasks[i].snapshot for i in page], page[-1] if len(ids) > limit else None)

    async def cancel(self, task_id: str) -> tuple[TaskSnapshot, bool] | None:
        stored = self.tasks.get(task_id)
        if stored is None:
            return None
        if stored.snapshot.terminal:
            return stored.snapshot, False
        self._change(task_id, TaskEvent.CANCEL, input_requests={})
        return stored.snapshot, True

    async def provide_input(self, task_id: str, responses: Any) -> TaskSnapshot | None:
        stored = self.tasks.get(task_id)
        if stored is None:
            return None
        if stored.snapshot.status is not TaskStatus.INPUT_REQUIRED:
            return stored.snapshot
        accepted = accept_responses(stored.snapshot.input_requests, responses)
        stored.answers.update(accepted)
        still_open = {k: v for k, v in stored.snapshot.input_requests.items() if k not in accepted}
        if still_open:
            stored.snapshot = replace(stored.snapshot, input_requests=still_open, last_updated_at=self._now())
        else:
            self._change(task_id, TaskEvent.INPUT_PROVIDED, input_requests={})
        return stored.snapshot

    async def fail_input(self, task_id: str, message: str) -> None:
        self._change(task_id, TaskEvent.COMPLETE, input_requests={}, result=error_result(message))

    def watch(self, task_id: str) -> MemoryWatch:
        return MemoryWatch(self, task_id)

    async def run(self, task_id: str) -> None:
        """Run the task's call once if it is working; apply what came of it."""
        stored = self.tasks[task_id]
        if stored.snapshot.status is not TaskStatus.WORKING:
            return
        stored.runs += 1
        request = stored.request
        outbound = RecordingOutbound()
        env = Env(
            version=self.version,
            catalog=self.catalog,
            outbound=outbound,
            server=ServerIdentity("memory", "1.0"),
            client_capabilities=request.client_capabilities,
            log_level=request.log_level,
            meta={} if request.progress_token is None else {"progressToken": request.progress_token},
            ledger=InputLedger(answers=dict(stored.answers)),
        )
        outcome = await run_task_call(request.tool, request.arguments, env)
        self.notifications.extend(outbound.notifications)
        if outcome.event is TaskEvent.NEEDS_INPUT:
            self._change(task_id, outcome.event, input_requests=outcome.questions)
        else:
            self._change(task_id, outcome.event, result=outcome.result, error=outcome.error)
