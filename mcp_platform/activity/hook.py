"""The call hook that feeds the activity log: tool calls, resource reads and prompt requests go to this process's
buffered writer; nothing is written on the request path. A tool call that became a task is recorded when the task
ends (``tool_run_ended``), wherever that is, with the run's time from its creation to its terminal status. Admin
changes, bulk changes, token exchanges and events of people's connections are written at once, by their receivers
below."""

from __future__ import annotations

import logging
from functools import cache
from typing import TYPE_CHECKING

from mcp_infra.conf import platform_settings
from mcp_platform.activity.rows import CallRow, call_row
from mcp_platform.activity.writer import BufferedWriter
from mcp_platform.gateway.observing import principal_parts
from mcp_platform.jobs.models import ToolRun
from mcp_platform.oauth.signals import TokenExchangeEvent
from mcp_platform.observe.calls import CANCELLED, ERROR, CallInfo, CallRecord, classify
from tenants.bulk_changes import BulkChange
from tenants.connections.events import ConnectionEvent

if TYPE_CHECKING:  # the admin package registers its classes when imported: only its type is needed here
    from tenants.admin.audit import AdminChange

logger = logging.getLogger(__name__)

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
        # A call that became a task is recorded when the task ends (``tool_run_recorded``), with its whole run.
        if record.info.method in LOGGED_METHODS and record.task_id is None:
            (self.writer or self._bind()).add(call_row(record))

    writer: BufferedWriter[CallRow] | None = None

    def _bind(self) -> BufferedWriter[CallRow]:
        self.writer = activity_writer()
        return self.writer


activity_hook = ActivityHook()


def tool_run_outcome(run: ToolRun) -> tuple[str, int | None]:
    """The activity outcome and JSON-RPC error code of a run in a terminal status."""
    if run.status == ToolRun.Status.CANCELLED:
        return CANCELLED, None
    if run.status == ToolRun.Status.FAILED:
        code = (run.error or {}).get("code")
        return ERROR, code if isinstance(code, int) else None
    return classify(result=run.result)


def tool_run_record(run: ToolRun) -> CallRecord:
    """The ``tools/call`` that became ``run``, as it ended: from the run's creation to its terminal status."""
    user, client = principal_parts(run.principal)
    origin = run.origin or {}
    started = run.created_at
    finished = run.finished_at or started
    outcome, code = tool_run_outcome(run)
    info = CallInfo(
        tenant_id=run.tenant_id,
        tenant_slug="",
        method="tools/call",
        target=run.tool_name,
        principal=user,
        client_id=client,
        client_name=str(origin.get("client_name", "")),
        client_version=str(origin.get("client_version", "")),
        protocol_version=run.protocol_version,
        transport=str(origin.get("transport", "")),
        request_id=str(origin.get("request_id", "")),
        started=0.0,
        started_at=started.timestamp(),
        # The writer keeps them only where the tenant opted in, redacted against the tool's schema.
        arguments=run.arguments if isinstance(run.arguments, dict) else None,
        headers=None,
        server=str(origin.get("server", "")),
    )
    return CallRecord(
        info=info, duration_s=max(0.0, (finished - started).total_seconds()), outcome=outcome, error_code=code
    )


def tool_run_recorded(sender: object, *, run: ToolRun, **kwargs: object) -> None:
    """``tool_run_ended`` receiver: the run's call goes to this process's writer (never raises: a signal's
    sender is a service that has already committed)."""
    try:
        activity_writer().add(call_row(tool_run_record(run)))
    except Exception:
        logger.exception("could not record the end of task %s in the activity log", run.pk)


def bulk_change_recorded(sender: object, *, change: BulkChange, **kwargs: object) -> None:
    """``catalog_bulk_changed`` receiver: one row for the whole import or refresh (written at once: bulk changes
    are rare, and an admin expects to see theirs)."""
    from mcp_platform.activity.services import activity_bulk_change_record

    try:
        activity_bulk_change_record(change=change)
    except Exception:
        logger.exception("could not record the %s of %s in the activity log", change.operation, change.source)


def admin_change_recorded(sender: object, *, change: AdminChange, **kwargs: object) -> None:
    """``admin_changed`` receiver: one row per admin save or delete, written in the admin's request (secret values
    redacted by the service)."""
    from mcp_platform.activity.services import activity_admin_change_record

    activity_admin_change_record(**vars(change))


def token_exchange_recorded(sender: object, *, event: TokenExchangeEvent, **kwargs: object) -> None:
    """``token_exchanged`` receiver: one row per exchange, issued or refused, written in the token endpoint's
    transaction (in a savepoint of its own: a failure here costs the row, never the exchange)."""
    from django.db import transaction

    from mcp_platform.activity.services import activity_token_exchange_record

    try:
        with transaction.atomic():
            activity_token_exchange_record(event=event)
    except Exception:
        logger.exception("could not record a token exchange by client %s in the activity log", event.client_id)


def connection_recorded(sender: object, *, event: ConnectionEvent, **kwargs: object) -> None:
    """``connection_event`` receiver: one row per event of a person's connection (at most one "used" per credential
    in ``USE_RESOLUTION``), in a savepoint of its own: a failure here costs the row, never the connection's work."""
    from django.db import transaction

    from mcp_platform.activity.services import activity_connection_record

    try:
        with transaction.atomic():
            activity_connection_record(event=event)
    except Exception:
        logger.exception("could not record a connection event (%s) in the activity log", event.action)
