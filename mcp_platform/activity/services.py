"""Writes to the activity log: batches of observed calls, admin changes, and the purge of expired rows."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from mcp_platform.activity.models import ActivityRecord
from mcp_platform.activity.redaction import REDACTED, arguments_to_keep, is_secret_name
from mcp_platform.observe.calls import CallRecord
from tenants.models import Tenant, Tool


def _cut(value: str, field: str) -> str:
    limit = getattr(ActivityRecord._meta.get_field(field), "max_length", None)
    return value if limit is None or len(value) <= limit else value[:limit]


def activity_calls_write(*, records: Sequence[CallRecord]) -> int:
    """Store ``records`` in one ``bulk_create``; records of tenants deleted meanwhile are skipped. Arguments are
    kept only for tenants that opted in, redacted against the tool's input schema. Returns the rows written."""
    tenant_ids = {record.info.tenant_id for record in records}
    keeps_arguments = dict(Tenant.objects.filter(pk__in=tenant_ids).values_list("pk", "activity_record_arguments"))
    schemas = _tool_schemas(
        {
            (r.info.tenant_id, r.info.target)
            for r in records
            if keeps_arguments.get(r.info.tenant_id)
            and r.info.method == "tools/call"
            and r.info.target
            and "\x00" not in r.info.target  # no tool is named so, and PostgreSQL refuses it in a query
        }
    )
    rows = []
    for record in records:
        info = record.info
        if info.tenant_id not in keeps_arguments:
            continue
        details = None
        if keeps_arguments[info.tenant_id] and info.arguments is not None:
            details = {"arguments": arguments_to_keep(info.arguments, schemas.get((info.tenant_id, info.target)))}
        rows.append(
            (
                info.tenant_id,
                dt.datetime.fromtimestamp(info.started_at, tz=dt.UTC),
                ActivityRecord.Kind.CALL.value,
                _text(info.principal, 64),
                _text(info.client_id, 255),
                _text(info.client_name, 255),
                _text(info.client_version, 64),
                _text(info.method, 64),
                _text(info.target or "", 512),
                _text(info.protocol_version, 16),
                _text(info.transport, 16),
                _text(info.request_id, 128),
                round(record.duration_s * 1000, 3),
                record.outcome,
                record.error_code,
                details,
            )
        )
    if connection.vendor == "postgresql":
        _copy_rows(rows)
    else:
        ActivityRecord.objects.bulk_create(ActivityRecord(**dict(zip(CALL_COLUMNS, row, strict=True))) for row in rows)
    return len(rows)


# The columns a call row fills, in the order of the tuples above (the model's field names are its column names).
CALL_COLUMNS = (
    "tenant_id",
    "at",
    "kind",
    "principal",
    "client_id",
    "client_name",
    "client_version",
    "method",
    "target",
    "protocol_version",
    "transport",
    "request_id",
    "duration_ms",
    "outcome",
    "error_code",
    "details",
)


def _copy_rows(rows: list[tuple[Any, ...]]) -> None:
    """PostgreSQL's COPY (psycopg formats the rows in C): a twelfth of the CPU of ``bulk_create`` per row, and
    less on the server too."""
    table = ActivityRecord._meta.db_table
    statement = f"COPY {table} ({', '.join(CALL_COLUMNS)}) FROM STDIN"
    with transaction.atomic(), connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in rows:
            # jsonb refuses the escaped NUL (\u0000) too.
            details = None if row[-1] is None else json.dumps(row[-1]).replace("\\u0000", "")
            copy.write_row((*row[:-1], details))


def _text(value: str, limit: int) -> str:
    """A client-sent string as stored: cut to its column, without NUL (PostgreSQL text cannot hold one, and one
    would fail the whole batch)."""
    value = value[:limit]
    return value.replace("\x00", "") if "\x00" in value else value


def _tool_schemas(keys: set[tuple[int, str | None]]) -> dict[tuple[int, str | None], Any]:
    if not keys:
        return {}
    query = Q()
    for tenant_id, name in keys:
        query |= Q(tenant_id=tenant_id, name=name)
    return {
        (t, n): schema for t, n, schema in Tool.objects.filter(query).values_list("tenant_id", "name", "input_schema")
    }


def snapshot_value(name: str, value: Any) -> Any:
    """A field's value as an admin-change record keeps it: JSON-safe, and never a secret."""
    if is_secret_name(name) or name in ("ciphertext", "value", "key_id"):
        return REDACTED if value not in (None, "") else value
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, dict)):
        return value
    if hasattr(value, "pk"):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return str(value)


def activity_admin_change_record(
    *,
    tenant_id: int,
    user_id: int | None,
    action: str,
    object_type: str,
    object_repr: str,
    object_id: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
) -> ActivityRecord:
    """Log one admin change to a tenant's catalog, clients, members or secrets (``action``: create, change or
    delete); ``before`` and ``after`` are field values, secret ones redacted here whatever the caller passed."""
    return ActivityRecord.objects.create(
        tenant_id=tenant_id,
        at=timezone.now(),
        kind=ActivityRecord.Kind.ADMIN,
        principal="" if user_id is None else str(user_id),
        method=_cut(f"admin/{action}", "method"),
        target=_cut(f"{object_type}: {object_repr}", "target"),
        request_id=_cut(object_id, "request_id"),
        details={
            "object_type": object_type,
            "object_id": object_id,
            "before": None if before is None else {k: snapshot_value(k, v) for k, v in before.items()},
            "after": None if after is None else {k: snapshot_value(k, v) for k, v in after.items()},
        },
    )


def activity_purge_expired(*, now: dt.datetime | None = None) -> int:
    """Delete every tenant's rows older than its retention; the number deleted."""
    now = now or timezone.now()
    deleted = 0
    for days in Tenant.objects.values_list("activity_retention_days", flat=True).distinct():
        cutoff = now - dt.timedelta(days=days)
        count, _ = ActivityRecord.objects.filter(tenant__activity_retention_days=days, at__lt=cutoff).delete()
        deleted += count
    return deleted
