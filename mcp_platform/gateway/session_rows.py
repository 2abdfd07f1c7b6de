"""The statements on ``LegacySession`` rows that every handshake-era session runs: create, find, update.

On PostgreSQL they run on the event loop (``mcp_infra.postgresql.aio``): no wait for the ORM's one thread, and
about a fifth of the ORM's CPU per statement. On other databases (SQLite on embedded defaults) they go through the
ORM. Both paths read and write the same columns; the model stays the schema's definition.
"""

from __future__ import annotations

from typing import Any

import orjson

from mcp_core.session import SessionState
from mcp_infra.postgresql import aio
from mcp_platform.gateway.models import LegacySession

_TABLE = LegacySession._meta.db_table
# Every concrete column, in model order: what a row read returns and an insert writes.
_COLUMNS = [str(field.column) for field in LegacySession._meta.concrete_fields]
_ATTNAMES = [field.attname for field in LegacySession._meta.concrete_fields]
_JSON = {field.attname for field in LegacySession._meta.concrete_fields if field.get_internal_type() == "JSONField"}
_UPDATABLE = {"state", "log_level", "last_seen_at"}

_INSERT = f"INSERT INTO {_TABLE} ({', '.join(_COLUMNS)}) VALUES ({', '.join(['%s'] * len(_COLUMNS))})"
_SELECT = (
    f"SELECT {', '.join(_COLUMNS)} FROM {_TABLE} WHERE id = %s AND tenant_id = %s AND principal = %s AND state <> %s"
)


async def insert(session: LegacySession) -> None:
    """Store a new session (every field set by the caller, timestamps included)."""
    if not aio.available():
        await session.asave(force_insert=True)
        return
    values = [
        orjson.dumps(getattr(session, name)).decode() if name in _JSON else getattr(session, name) for name in _ATTNAMES
    ]
    # Retried on a new connection if its first connection died unanswered: the id is fresh, so a duplicate only
    # means the first attempt committed.
    await aio.execute(_INSERT + " ON CONFLICT (id) DO NOTHING", values)
    session._state.adding = False
    session._state.db = "default"


async def find_open(*, tenant_id: int, principal: str, session_id: str) -> LegacySession | None:
    """The session with this id in this tenant, started by ``principal``, unless it ended."""
    if not aio.available():
        return (
            await LegacySession.objects.filter(tenant_id=tenant_id, principal=principal, id=session_id)
            .exclude(state=SessionState.CLOSED.value)
            .afirst()
        )
    rows = await aio.execute(_SELECT, (session_id, tenant_id, principal, SessionState.CLOSED.value))
    if not rows:
        return None
    # Django's adapters hand JSON columns over as text (its JSONField decodes them); so does this read.
    values = [
        orjson.loads(value) if name in _JSON and isinstance(value, str) else value
        for name, value in zip(_ATTNAMES, rows[0], strict=True)
    ]
    return LegacySession.from_db("default", _ATTNAMES, values)


async def update(session_id: str, *, only_in_state: str | None = None, **values: Any) -> None:
    """Set ``values`` (state, log_level, last_seen_at) on the session's row, if it is in ``only_in_state``."""
    unknown = set(values) - _UPDATABLE
    if unknown:
        raise ValueError(f"not a session field updated here: {sorted(unknown)}")
    if not aio.available():
        rows = LegacySession.objects.filter(pk=session_id)
        if only_in_state is not None:
            rows = rows.filter(state=only_in_state)
        await rows.aupdate(**values)
        return
    assignments = ", ".join(f"{name} = %s" for name in values)
    params: list[Any] = [*values.values(), session_id]
    sql = f"UPDATE {_TABLE} SET {assignments} WHERE id = %s"
    if only_in_state is not None:
        sql += " AND state = %s"
        params.append(only_in_state)
    await aio.execute(sql, params)
