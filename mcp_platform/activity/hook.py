"""The call hook that feeds the activity log: tool calls, resource reads and prompt requests go to this process's
buffered writer; nothing is written on the request path."""

from __future__ import annotations

from functools import cache

from mcp_platform.activity.rows import CallRow, call_row
from mcp_platform.activity.writer import BufferedWriter
from mcp_platform.conf import platform_settings
from mcp_platform.observe.calls import CallInfo, CallRecord

LOGGED_METHODS = frozenset({"tools/call", "resources/read", "prompts/get"})


def _write(rows: list[CallRow]) -> None:
    from django.db import close_old_connections

    from mcp_platform.activity.services import activity_calls_write

    # The writer thread's own connection: one the database dropped (or that grew too old) is replaced first.
    close_old_connections()
    activity_calls_write(rows=rows)


@cache
def activity_writer() -> BufferedWriter[CallRow]:
    """This process's writer (made on first use, with the settings of that moment)."""
    return BufferedWriter(
        sink=_write,
        capacity=platform_settings.ACTIVITY_BUFFER,
        batch=platform_settings.ACTIVITY_BATCH,
        interval=platform_settings.ACTIVITY_FLUSH_SECONDS,
        name="activity-log",
        # 0: no writer thread; what is buffered is written when the owner flushes, and at exit.
        threaded=platform_settings.ACTIVITY_FLUSH_SECONDS > 0,
    )


class ActivityHook:
    def started(self, info: CallInfo) -> object:
        return None

    def finished(self, record: CallRecord, token: object) -> None:
        # Only the row is made here (its repeating columns shared: ``rows.call_row``); the writer thread makes it
        # into text (``services._copy_rows``).
        if record.info.method in LOGGED_METHODS:
            (self.writer or self._bind()).add(call_row(record))

    writer: BufferedWriter[CallRow] | None = None

    def _bind(self) -> BufferedWriter[CallRow]:
        self.writer = activity_writer()
        return self.writer


activity_hook = ActivityHook()
