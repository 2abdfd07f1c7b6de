"""A call as the activity log buffers it: one flat tuple of strings and numbers, made when the call ends.

A buffered ``CallRecord`` keeps its ``CallInfo``, the request's headers and its arguments alive until the writer runs
(a second): thousands of containers the garbage collector walks on every collection meanwhile, which cost a call
more than writing its row does. A tuple of strings and numbers is left alone by the collector after its first
pass. Arguments are held only where the tenant opted in to keeping them (``CallInfo.arguments`` is None otherwise).
"""

from __future__ import annotations

from typing import Any, Final

from mcp_platform.observe.calls import CallRecord

# ``CallRow``: (tenant_id, started_at, principal, client_id, client_name, client_version, method, target,
#  protocol_version, transport, request_id, duration_s, outcome, error_code, arguments)
CallRow = tuple[
    int, float, str, str, str, str, str, str, str, str, str, float, str, "int | None", "dict[str, Any] | None"
]
ARGUMENTS: Final = 14


def call_row(record: CallRecord) -> CallRow:
    """The row ``record`` is kept as until the writer stores it."""
    info = record.info
    return (
        info.tenant_id,
        info.started_at,
        info.principal,
        info.client_id,
        info.client_name,
        info.client_version,
        info.method,
        info.target or "",
        info.protocol_version,
        info.transport,
        info.request_id,
        record.duration_s,
        record.outcome,
        record.error_code,
        info.arguments,
    )
