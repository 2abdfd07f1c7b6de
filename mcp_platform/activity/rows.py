"""A call as the activity log buffers it: one small tuple, made when the call ends, whose repeating part is shared.

A buffered ``CallRecord`` keeps its ``CallInfo``, the request's headers and its arguments alive until the writer runs
(a second): thousands of containers the garbage collector walks on every collection meanwhile, which cost a call
more than writing its row does. A tuple of strings and numbers is left alone by the collector after its first
pass. Arguments are held only where the tenant opted in to keeping them (``CallInfo.arguments`` is None otherwise).

The columns that repeat from call to call (principal to server: ``Middle``) are held once per distinct set, not
once per call: the method, tool name, version and client strings of a request are fresh objects (parsed from its
body and headers), and a second's worth of them kept alive until the writer runs scattered the request path's own
short-lived objects over more memory. Shared, a buffered call holds four objects instead of nine.
"""

from __future__ import annotations

from typing import Any, Final

from mcp_platform.observe.calls import CallRecord

# (principal, client_id, client_name, client_version, method, target, protocol_version, transport, server)
Middle = tuple[str, str, str, str, str, str, str, str, str]
METHOD: Final = 4
TARGET: Final = 5

# ``CallRow``: (tenant_id, started_at, middle, request_id, duration_s, outcome, error_code, arguments)
CallRow = tuple[int, float, Middle, str, float, str, "int | None", "dict[str, Any] | None"]
TENANT: Final = 0
STARTED_AT: Final = 1
MIDDLE: Final = 2
REQUEST_ID: Final = 3
DURATION: Final = 4
OUTCOME: Final = 5
ERROR_CODE: Final = 6
ARGUMENTS: Final = 7

# Each distinct ``Middle`` of this process, itself (per process, bounded: a full table starts again).
_SHARED: dict[Middle, Middle] = {}
_SHARED_MAX: Final = 4096


def call_row(record: CallRecord) -> CallRow:
    """The row ``record`` is kept as until the writer stores it."""
    info = record.info
    key: Middle = (
        info.principal,
        info.client_id,
        info.client_name,
        info.client_version,
        info.method,
        info.target or "",
        info.protocol_version,
        info.transport,
        info.server,
    )
    middle = _SHARED.get(key)
    if middle is None:
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()
        middle = _SHARED[key] = key
    return (
        info.tenant_id,
        info.started_at,
        middle,
        info.request_id,
        record.duration_s,
        record.outcome,
        record.error_code,
        info.arguments,
    )
