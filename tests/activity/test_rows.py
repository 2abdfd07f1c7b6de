"""Buffered call rows: the repeating columns are held once per distinct set, whatever objects a request made."""

from __future__ import annotations

import time

from mcp_platform.activity.rows import MIDDLE, REQUEST_ID, call_row
from mcp_platform.observe.calls import CallInfo, CallRecord


def record(*, target: str, request_id: str) -> CallRecord:
    # Each string built at run time, as a request's parsed body and headers are: equal, never the same object.
    fresh = "".join
    info = CallInfo(
        tenant_id=3,
        tenant_slug="acme",
        method=fresh(["tools/", "call"]),
        target=fresh(list(target)),
        principal=fresh(["1", "7"]),
        client_id=fresh(["app-", "1"]),
        client_name=fresh(["Cla", "ude"]),
        client_version=fresh(["1.", "2"]),
        protocol_version=fresh(["2026-", "07-28"]),
        transport="streamable-http",
        request_id=request_id,
        started=time.perf_counter(),
        started_at=time.time(),
        arguments=None,
        headers=None,
    )
    return CallRecord(info=info, duration_s=0.004, outcome="ok", error_code=None)


def test_calls_with_the_same_repeating_columns_share_one_held_copy_of_them() -> None:
    first, second = record(target="weather", request_id="1"), record(target="weather", request_id="2")
    assert first.info.method is not second.info.method

    one, two = call_row(first), call_row(second)

    assert one[MIDDLE] is two[MIDDLE]
    assert one[MIDDLE] == (
        "17",
        "app-1",
        "Claude",
        "1.2",
        "tools/call",
        "weather",
        "2026-07-28",
        "streamable-http",
        "",
    )
    assert (one[REQUEST_ID], two[REQUEST_ID]) == ("1", "2")


def test_calls_that_differ_in_a_repeating_column_keep_their_own() -> None:
    weather, news = call_row(record(target="weather", request_id="1")), call_row(record(target="news", request_id="2"))

    assert weather[MIDDLE] is not news[MIDDLE]
    assert (weather[MIDDLE][5], news[MIDDLE][5]) == ("weather", "news")
