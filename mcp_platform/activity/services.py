"""Writes to the activity log: batches of observed calls, admin changes, token exchanges, events of people's own
connections, and the purge of expired rows."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from mcp_platform.activity.models import ActivityRecord
from mcp_platform.activity.rows import (
    ARGUMENTS,
    DURATION,
    ERROR_CODE,
    METHOD,
    MIDDLE,
    OUTCOME,
    REQUEST_ID,
    STARTED_AT,
    TARGET,
    TENANT,
    CallRow,
    Middle,
)
from mcp_platform.oauth.signals import TokenExchangeEvent
from mcp_platform.observe.redaction import REDACTED, arguments_to_keep, is_secret_name
from tenants.bulk_changes import BulkChange
from tenants.connections.events import REFRESH_FAILED, ConnectionEvent
from tenants.models import Tenant, Tool


def _cut(value: str, field: str) -> str:
    return value[: _limit(field)]


def activity_calls_write(*, rows: Sequence[CallRow]) -> int:
    """Store the calls ``rows`` (``rows.call_row``) in one statement; rows of tenants deleted meanwhile are skipped.
    Arguments are kept only for tenants that opted in, redacted against the tool's input schema. Returns the rows
    written."""
    keeps_arguments = dict(
        Tenant.objects.filter(pk__in={row[TENANT] for row in rows}).values_list("pk", "activity_record_arguments")
    )
    # Most calls keep no arguments: they go straight to their line of COPY text.
    plain: list[CallRow] = []
    calls: list[CallRow] = []
    for row in rows:
        keeps = keeps_arguments.get(row[TENANT])
        if keeps is None:
            continue  # its tenant was deleted meanwhile
        if keeps and row[ARGUMENTS] is not None:
            calls.append(row)
        else:
            plain.append(row)
    schemas = _tool_schemas(
        {
            (row[TENANT], row[MIDDLE][TARGET])
            for row in calls
            if row[MIDDLE][METHOD] == "tools/call"
            and row[MIDDLE][TARGET]
            and "\x00" not in row[MIDDLE][TARGET]  # no tool is named so, and PostgreSQL refuses it in a query
        }
    )
    stored = [
        (
            row,
            {
                "arguments": arguments_to_keep(
                    cast(dict[str, Any], row[ARGUMENTS]), schemas.get((row[TENANT], row[MIDDLE][TARGET]))
                )
            },
        )
        for row in calls
    ]
    if connection.vendor == "postgresql":
        _copy_rows(plain, stored)
    elif plain or stored:
        _insert_rows([(row, None) for row in plain] + stored)
    return len(plain) + len(stored)


def _insert_rows(stored: list[tuple[CallRow, Any]]) -> None:
    """Other databases (SQLite on embedded defaults): one ``executemany`` of plain values. On SQLite the time is
    written as its field would write it (UTC, ``YYYY-MM-DD HH:MM:SS[.ffffff]``) from the second's text made once,
    as for COPY: 6-7 µs a row of CPU, where the field's own preparation took 13 (and model instances with
    ``bulk_create`` 51). The arguments are kept as PostgreSQL would keep them, so that both databases store the
    same."""
    at_field = ActivityRecord._meta.get_field("at")
    details_field = ActivityRecord._meta.get_field("details")
    sqlite = connection.vendor == "sqlite"
    params = []
    for row, details in stored:
        kept = None if details is None else details_field.get_db_prep_save(json.loads(_json_text(details)), connection)
        if sqlite:
            at: Any = _sqlite_time(row[STARTED_AT])
        else:
            at = at_field.get_db_prep_save(dt.datetime.fromtimestamp(row[STARTED_AT], tz=dt.UTC), connection)
        params.append(_values(row, kept, at))
    marks = ", ".join(["%s"] * len(CALL_COLUMNS))
    # One transaction for the batch: in autocommit each row is a commit of its own (on SQLite a WAL commit: 41-48
    # µs of CPU a row, against 16-19 in one transaction).
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {ActivityRecord._meta.db_table} ({_COLUMN_LIST}) VALUES ({marks})", params)


def _sqlite_time(started_at: float) -> str:
    """A call's time as Django's SQLite backend stores an aware datetime: naive UTC text, without the fraction when
    it is zero (so that comparisons with the ORM's own parameters hold), to the microsecond as COPY's is."""
    second, micro = _second_and_micro(started_at)
    return f"{_second_text(second)}.{micro:06d}" if micro else _second_text(second)


def _second_and_micro(started_at: float) -> tuple[int, int]:
    """A Unix time's whole second and its microseconds, rounded as ``datetime.fromtimestamp`` rounds them."""
    second = int(started_at)
    micro = round((started_at - second) * 1_000_000)
    if micro == 1_000_000:
        return second + 1, 0
    return second, micro


# The columns a call row fills, in the order ``_values`` gives them (the model's field names are its column names).
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
    "server",
    "request_id",
    "duration_ms",
    "outcome",
    "error_code",
    "details",
)
_COLUMN_LIST = ", ".join(CALL_COLUMNS)
_CALL = ActivityRecord.Kind.CALL.value


def _limit(field: str) -> int:
    """The length of ``field``'s column."""
    limit = getattr(ActivityRecord._meta.get_field(field), "max_length", None)
    assert isinstance(limit, int), field
    return limit


# The text columns' lengths (principal to request_id), read from the model once: ``_values`` and
# ``call_copy_line`` cut to them.
_TEXT_COLUMNS = CALL_COLUMNS[3:13]
_TEXT_LIMITS = tuple(_limit(field) for field in _TEXT_COLUMNS)
# The columns that repeat from call to call (principal to server), then the request id.
_MIDDLE_LIMITS, _REQUEST_ID = _TEXT_LIMITS[:-1], _TEXT_LIMITS[-1]


def _values(row: CallRow, details: Any, at: Any) -> tuple[Any, ...]:
    """The values of ``CALL_COLUMNS`` for one call, strings cut to their column (one too long would fail the whole
    batch) and without NUL (PostgreSQL text cannot hold one); the repeating ones made once (``_cut_middle``)."""
    return (
        row[TENANT],
        at,
        _CALL,
        *_cut_middle(row[MIDDLE]),
        _text(row[REQUEST_ID], _REQUEST_ID),
        round(row[DURATION] * 1000, 3),
        row[OUTCOME],
        row[ERROR_CODE],
        details,
    )


# COPY's text format: a tab between columns, \N for NULL, and a backslash escaping itself, tab, newline and CR.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
# ... and what ``_text`` mends: NUL, and lone surrogates (JSON can carry them, UTF-8 cannot).
_UNENCODABLE = re.compile("[\x00\ud800-\udfff]")


def _copy_field(value: Any) -> str:
    if value is None:
        return "\\N"
    return (value if isinstance(value, str) else str(value)).translate(_COPY_ESCAPES)


# Per process, each made once: a second's text (a call's time up to its microseconds), and the columns that repeat
# from call to call (principal to server), cut (``_values``) and as COPY text. Bounded: a full cache starts again.
_SECONDS: dict[int, str] = {}
_CUT_MIDDLES: dict[Middle, tuple[str, ...]] = {}
_MIDDLES: dict[Middle, str] = {}
_MIDDLES_MAX = 4096


def _cut_middle(key: Middle) -> tuple[str, ...]:
    """The repeating columns of a call (principal to server), each cut as ``_text`` cuts it."""
    middle = _CUT_MIDDLES.get(key)
    if middle is None:
        if len(_CUT_MIDDLES) >= _MIDDLES_MAX:
            _CUT_MIDDLES.clear()
        middle = _CUT_MIDDLES[key] = tuple(_text(v, n) for v, n in zip(key, _MIDDLE_LIMITS, strict=True))
    return middle


def _second_text(second: int) -> str:
    """``second`` (Unix time) as UTC ``YYYY-MM-DD HH:MM:SS``."""
    text = _SECONDS.get(second)
    if text is None:
        if len(_SECONDS) > 64:
            _SECONDS.clear()
        text = _SECONDS[second] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(second))
    return text


def call_copy_line(row: CallRow, details: str | None = None) -> str:
    """One call as a line of COPY's text format (``details``: the arguments kept, as JSON text). Strings are cut
    to their columns and escaped; the repeating columns come from ``_MIDDLES``, so the common call is one f-string.
    The duration is formatted to three places (the value ``round`` gives, at a sixth of its cost with ``str``)."""
    second, micro = _second_and_micro(row[STARTED_AT])
    prefix = _second_text(second)
    key = row[MIDDLE]
    middle = _MIDDLES.get(key)
    if middle is None:
        if len(_MIDDLES) >= _MIDDLES_MAX:
            _MIDDLES.clear()
        middle = _MIDDLES[key] = "\t".join(_copy_field(value) for value in _cut_middle(key))
    request_id = row[REQUEST_ID]
    if not (request_id.isdigit() and len(request_id) <= _REQUEST_ID):
        request_id = _copy_field(_text(request_id, _REQUEST_ID))
    code = "\\N" if row[ERROR_CODE] is None else row[ERROR_CODE]
    kept = "\\N" if details is None else _copy_field(details)
    return (
        f"{row[TENANT]}\t{prefix}.{micro:06d}+00\t{_CALL}\t{middle}\t{request_id}\t"
        f"{row[DURATION] * 1000:.3f}\t{row[OUTCOME]}\t{code}\t{kept}\n"
    )


# Rows made into text and sent between two chances for the request path to take the GIL back (the writer runs in
# a thread of a web process).
COPY_CHUNK = 256


def _copy_rows(plain: list[CallRow], stored: list[tuple[CallRow, Any]]) -> None:
    """PostgreSQL's COPY of the calls ``plain`` (no arguments kept) and ``stored`` (with theirs), in its text format:
    a twelfth of the CPU of ``bulk_create`` per row, and less on the server too. Each chunk is made into text just
    before it is sent: the writer runs in a thread of a web process, and formatting here, a chunk at a time with
    the code and data warm, cost a call a third of what the same formatting cost on the request path."""
    if not plain and not stored:
        return
    table = ActivityRecord._meta.db_table
    statement = f"COPY {table} ({_COLUMN_LIST}) FROM STDIN"
    with transaction.atomic(), connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for start in range(0, len(plain), COPY_CHUNK):
            copy.write("".join([call_copy_line(row) for row in plain[start : start + COPY_CHUNK]]))
            time.sleep(0)  # let the event loop's thread run: a long batch must not hold every request up
        for start in range(0, len(stored), COPY_CHUNK):
            chunk = stored[start : start + COPY_CHUNK]
            copy.write("".join([call_copy_line(row, _json_text(details)) for row, details in chunk]))
            time.sleep(0)


# An escaped NUL that is not itself an escaped backslash followed by "u0000".
_ESCAPED_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def _json_text(value: Any) -> str:
    """``value`` as JSON that jsonb takes: without NUL (refused even escaped) and with lone surrogates as "?"."""
    text = _ESCAPED_NUL.sub(r"\1", json.dumps(value, ensure_ascii=False))
    return text if _UNENCODABLE.search(text) is None else text.encode("utf-8", "replace").decode("utf-8")


def _text(value: str, limit: int) -> str:
    """A client-sent string as stored: cut to its column, without NUL and with a lone surrogate as "?" (neither
    can be stored, and either would fail the whole batch)."""
    if len(value) > limit:
        value = value[:limit]
    if _UNENCODABLE.search(value) is None:
        return value
    return value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


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
        # No request id: an admin change answers no JSON-RPC request (its object's id is in ``details``).
        details={
            "object_type": object_type,
            "object_id": object_id,
            "before": None if before is None else {k: snapshot_value(k, v) for k, v in before.items()},
            "after": None if after is None else {k: snapshot_value(k, v) for k, v in after.items()},
        },
    )


def activity_bulk_change_record(*, change: BulkChange) -> ActivityRecord:
    """Log one bulk change to a tenant's catalog (an OpenAPI import, an upstream refresh) as one row: who made it
    (the admin's user id, or what did: a command, the schedule), and the names of what it added, changed and
    removed."""
    return ActivityRecord.objects.create(
        tenant_id=change.tenant_id,
        at=timezone.now(),
        kind=ActivityRecord.Kind.ADMIN,
        principal="" if change.actor.user_id is None else str(change.actor.user_id),
        client_name=_cut(change.actor.label, "client_name"),
        method=_cut(f"admin/{change.operation}", "method"),
        target=_cut(change.source, "target"),
        details={"operation": change.operation, "source": change.source, "actor": change.actor.label}
        | change.summary(),
    )


TOKEN_EXCHANGE_METHOD = "oauth/token-exchange"
# The refusal a client is told to wait out (429), as the log's outcome for a limit; every other refusal is "refused".
LIMIT_ERROR = "temporarily_unavailable"


def activity_token_exchange_record(*, event: TokenExchangeEvent) -> ActivityRecord:
    """Log one token exchange of a tenant's client: the person it acts for, the client, the upstream, the scopes,
    and whether it was issued or refused (with the OAuth error code). The event carries no token."""
    if event.error is None:
        outcome = ActivityRecord.Outcome.OK
    elif event.error == LIMIT_ERROR:
        outcome = ActivityRecord.Outcome.RATE_LIMITED
    else:
        outcome = ActivityRecord.Outcome.REFUSED
    details: dict[str, str] = {"scope": event.scope}
    if event.error is not None:
        details["error"] = event.error
    return ActivityRecord.objects.create(
        tenant_id=event.tenant_id,
        at=timezone.now(),
        kind=ActivityRecord.Kind.EXCHANGE,
        principal="" if event.user_id is None else str(event.user_id),
        client_id=_cut(event.client_id, "client_id"),
        client_name=_cut(event.client_name, "client_name"),
        method=TOKEN_EXCHANGE_METHOD,
        target=_cut(event.target, "target"),
        outcome=outcome,
        details=details,
    )


CONNECTION_METHOD_PREFIX = "connection/"


def activity_connection_record(*, event: ConnectionEvent) -> ActivityRecord:
    """Log one event of a person's own connection or key: whose (``principal``), for what (``target``), what
    happened (``connection/<action>``), the admin who disconnected a member, a failed refresh's error. The event
    carries no token or key, and nothing else is read: none can reach the row."""
    details: dict[str, Any] = {}
    if event.by_user_id is not None:
        details["by"] = event.by_user_id
    if event.error:
        details["error"] = event.error
    return ActivityRecord.objects.create(
        tenant_id=event.tenant_id,
        at=timezone.now(),
        kind=ActivityRecord.Kind.CONNECTION,
        principal=str(event.user_id),
        method=_cut(CONNECTION_METHOD_PREFIX + event.action, "method"),
        target=_cut(event.target, "target"),
        outcome=ActivityRecord.Outcome.ERROR if event.action == REFRESH_FAILED else ActivityRecord.Outcome.OK,
        details=details or None,
    )


def activity_purge_expired(*, now: dt.datetime | None = None) -> int:
    """Delete every tenant's rows older than its retention, and the rows of tenants that no longer exist; the
    number deleted."""
    now = now or timezone.now()
    deleted = 0
    for days in Tenant.objects.values_list("activity_retention_days", flat=True).distinct():
        cutoff = now - dt.timedelta(days=days)
        count, _ = ActivityRecord.objects.filter(tenant__activity_retention_days=days, at__lt=cutoff).delete()
        deleted += count
    gone = _tenants_in_log() - set(Tenant.objects.values_list("pk", flat=True))
    if gone:
        # A tenant deleted while a writer held its last calls (the table has no foreign-key constraint).
        count, _ = ActivityRecord.objects.filter(tenant_id__in=gone).delete()
        deleted += count
    return deleted


def _tenants_in_log() -> set[int]:
    """The tenants the log holds rows of, read from the (tenant, time) index one tenant at a time (a loose index
    scan: as many probes as tenants, however many rows)."""
    table = connection.ops.quote_name(ActivityRecord._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE seen(id) AS (
                SELECT MIN(tenant_id) FROM {table}
                UNION ALL
                SELECT (SELECT MIN(tenant_id) FROM {table} WHERE tenant_id > seen.id)
                FROM seen WHERE seen.id IS NOT NULL
            )
            SELECT id FROM seen WHERE id IS NOT NULL
            """
        )
        return {row[0] for row in cursor.fetchall()}
