"""Reads of tool runs, always as one caller sees them: its tenant, its principal, its session (handshake era),
and nothing past its expiry. A run that is not the caller's does not exist for it."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from mcp_core.errors import InvalidParams
from mcp_core.tasks import TERMINAL
from mcp_core.text import storable
from mcp_platform.jobs.models import ToolRun

# The status column holds ``TaskStatus`` values; which of them are final is ``mcp_core.tasks``' to say.
TERMINAL_STATUSES = tuple(status.value for status in TERMINAL)


ANONYMOUS = "anonymous"


class Caller(NamedTuple):  # built on every request: a record, not a frozen dataclass (see observe.calls)
    """Whose tasks a request may see: 2026-07-28 requests have no session (``session_id`` is empty), so a
    handshake-era task is never visible to a stateless request or the other way round. ``client_address`` is the
    client's address as the rate limits find it (``oauth.throttling.client_address``)."""

    tenant_id: int
    principal: str
    session_id: str
    protocol_version: str
    client_address: str = ""

    @property
    def quota_key(self) -> str:
        """Whose allowance of unfinished tasks a new run uses: the principal's; on a public tenant, where every
        caller is ``anonymous``, the client's address (its session when the address is unknown)."""
        if self.principal != ANONYMOUS:
            return self.principal
        if self.client_address and self.client_address != "unknown":
            return f"{ANONYMOUS} address:{self.client_address}"
        if self.session_id:
            return f"{ANONYMOUS} session:{self.session_id}"
        return ANONYMOUS


def tool_runs_visible(*, caller: Caller) -> QuerySet[ToolRun]:
    """The runs ``caller`` may see: its own, in its tenant and session, not expired."""
    return ToolRun.objects.filter(
        tenant_id=caller.tenant_id,
        principal=caller.principal,
        session_id=caller.session_id,
        expires_at__gt=timezone.now(),
    )


def tool_run_by_id(runs: QuerySet[ToolRun], task_id: str) -> QuerySet[ToolRun]:
    """``runs`` narrowed to the task ``task_id``; empty without a query for an id no task can have."""
    return runs.filter(pk=task_id) if storable(task_id) else runs.none()


def tool_run_get(*, caller: Caller, task_id: str) -> ToolRun | None:
    return tool_run_by_id(tool_runs_visible(caller=caller), task_id).first()


async def atool_run_get(*, caller: Caller, task_id: str) -> ToolRun | None:
    return await tool_run_by_id(tool_runs_visible(caller=caller), task_id).afirst()


def _list_key(run: ToolRun) -> str:
    return f"{run.created_at.isoformat()}|{run.pk}"


def _parse_list_key(key: str) -> tuple[datetime, str]:
    created, _, task_id = key.rpartition("|")
    try:
        moment = datetime.fromisoformat(created)
    except ValueError:
        raise InvalidParams("Invalid cursor") from None
    return moment, task_id


async def atool_run_list(*, caller: Caller, after: str | None, limit: int) -> tuple[list[ToolRun], str | None]:
    """The caller's runs newest first, after the key of the last one seen; and the key after this page.

    Raises InvalidParams for a key this selector did not produce.
    """
    runs = tool_runs_visible(caller=caller)
    if after is not None:
        created, task_id = _parse_list_key(after)
        runs = runs.filter(Q(created_at__lt=created) | Q(created_at=created, pk__lt=task_id))
    page = [run async for run in runs.order_by("-created_at", "-pk")[: limit + 1]]
    more = len(page) > limit
    page = page[:limit]
    return page, _list_key(page[-1]) if more and page else None


def active_counts(*, tenant_id: int, quota_key: str) -> tuple[int, int]:
    """Unfinished, unexpired runs counted against ``quota_key`` and against the whole tenant, in one query."""
    runs = ToolRun.objects.filter(tenant_id=tenant_id, expires_at__gt=timezone.now()).exclude(
        status__in=TERMINAL_STATUSES
    )
    counts = runs.aggregate(caller=Count("pk", filter=Q(quota_key=quota_key)), tenant=Count("pk"))
    return counts["caller"], counts["tenant"]


def tool_run_status_counts(*, limit: int) -> list[tuple[str, str, int]]:
    """Unexpired runs per tenant (slug) and status, platform-wide, in one grouped query (``/metrics``).

    At most ``limit`` rows: a scrape stays one bounded query however many tenants there are.
    """
    rows = (
        ToolRun.objects.filter(expires_at__gt=timezone.now())
        .values_list("tenant__slug", "status")
        .annotate(count=Count("pk"))
        .order_by("tenant__slug", "status")[:limit]
    )
    return [(slug, status, count) for slug, status, count in rows]
