"""The latest progress of a call running on a worker, kept on its ``ToolRun``: written at once the first time, then
at most once per ``PROGRESS_WRITE_SECONDS`` (the latest report wins, the last one is never lost), so a tool that
reports in a tight loop costs a few writes a second rather than one per report."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

from asgiref.sync import sync_to_async

from mcp_platform.jobs import services
from mcp_platform.jobs.models import ToolRun

logger = logging.getLogger(__name__)
JSONObject = dict[str, Any]

# Twice a second is as often as anyone watching (the admin polls each second) can tell apart.
PROGRESS_WRITE_SECONDS = 0.5


def progress_text(params: JSONObject) -> str:
    """The words for a progress report: its message, else ``progress/total``."""
    if isinstance(params.get("message"), str) and params["message"]:
        return str(params["message"])
    total = params.get("total")
    return f"{params.get('progress')}/{total}" if total is not None else f"Progress: {params.get('progress')}"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


class ProgressRecorder:
    """Writes the progress one start of a run reports. ``as_status``: the report is also the task's status message
    (2026-07-28). Call ``settle`` when the call ends, ``close`` when it is abandoned."""

    def __init__(self, run: ToolRun, *, as_status: bool, interval: float = PROGRESS_WRITE_SECONDS) -> None:
        self._run = run
        self._as_status = as_status
        self._interval = interval
        self._pending: JSONObject | None = None
        self._last_write = -math.inf
        self._timer: asyncio.Task[None] | None = None  # waiting to write
        self._inflight: asyncio.Task[None] | None = None  # a timer that is writing

    async def report(self, params: JSONObject) -> None:
        self._pending = params
        if self._timer is not None:
            return  # a write is already due; it takes this report
        wait = self._last_write + self._interval - asyncio.get_running_loop().time()
        if wait <= 0:
            await self._write()
        else:
            self._timer = asyncio.create_task(self._write_after(wait))

    async def settle(self) -> None:
        """Write what is still pending now (the call has ended), after a write already under way: the run's next
        statement must not race it (SQLite refuses a second writer outright)."""
        self.close()
        if self._inflight is not None:
            await self._inflight
        await self._write_logged()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def _write_after(self, wait: float) -> None:
        await asyncio.sleep(wait)
        self._timer = None
        self._inflight = asyncio.current_task()
        try:
            await self._write_logged()
        finally:
            self._inflight = None

    async def _write_logged(self) -> None:
        try:
            await self._write()
        except Exception:  # a lost progress write must not fail the call or its outcome; the next report retries
            logger.warning("progress of tool run %s not stored", self._run.pk, exc_info=True)

    async def _write(self) -> None:
        params, self._pending = self._pending, None
        if params is None:
            return
        self._last_write = asyncio.get_running_loop().time()
        run = self._run
        message = params.get("message")
        await sync_to_async(services.tool_run_record_progress)(
            tenant_id=run.tenant_id,
            run_id=run.pk,
            generation=run.generation,
            progress=_number(params.get("progress")),
            total=_number(params.get("total")),
            message=message if isinstance(message, str) else "",
            status_message=progress_text(params) if self._as_status else None,
        )
