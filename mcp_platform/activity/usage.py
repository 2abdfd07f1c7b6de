"""Usage figures from activity rows: calls, errors and p50/p95 latency per tool and per client, and calls over time.

Percentiles are computed by PostgreSQL (``percentile_cont``); other databases (SQLite, embedded) get them from the
durations in Python, which suits their small logs.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Aggregate, Count, F, FloatField, Q, QuerySet
from django.db.models.functions import TruncDay, TruncHour, TruncMinute

WINDOWS: dict[str, tuple[str, dt.timedelta, Any, dt.timedelta]] = {
    # key: (label, span, bucket function, bucket width)
    "1h": ("Last hour", dt.timedelta(hours=1), TruncMinute, dt.timedelta(minutes=1)),
    "24h": ("Last 24 hours", dt.timedelta(days=1), TruncHour, dt.timedelta(hours=1)),
    "30d": ("Last 30 days", dt.timedelta(days=30), TruncDay, dt.timedelta(days=1)),
}
TOP = 20


class PercentileCont(Aggregate):
    """PostgreSQL's ordered-set aggregate ``percentile_cont(p) WITHIN GROUP (ORDER BY expr)``."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression: Any, fraction: float) -> None:
        super().__init__(expression, fraction=float(fraction))


@dataclass(frozen=True)
class Usage:
    name: str
    calls: int
    errors: int
    p50_ms: float | None
    p95_ms: float | None


@dataclass(frozen=True)
class Bucket:
    start: dt.datetime
    calls: int
    errors: int


def _percentile(values: list[float], fraction: float) -> float | None:
    """Linear interpolation between closest ranks, as ``percentile_cont`` does."""
    if not values:
        return None
    values = sorted(values)
    rank = fraction * (len(values) - 1)
    low = int(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


ERRORS = ~Q(outcome="ok")


def usage_by(calls: QuerySet[Any], field: str) -> list[Usage]:
    """Per value of ``field`` (``target`` or ``client_name``) of the call rows: the busiest ``TOP`` first."""
    grouped = calls.values(field).annotate(calls=Count("id"), errors=Count("id", filter=ERRORS))
    if connection.vendor == "postgresql":
        rows = grouped.annotate(
            p50=PercentileCont(F("duration_ms"), 0.5), p95=PercentileCont(F("duration_ms"), 0.95)
        ).order_by("-calls", field)[:TOP]
        return [Usage(r[field] or "(none)", r["calls"], r["errors"], r["p50"], r["p95"]) for r in rows]
    top = list(grouped.order_by("-calls", field)[:TOP])
    durations: dict[str, list[float]] = defaultdict(list)
    names = [r[field] for r in top]
    for name, duration in calls.filter(**{f"{field}__in": names}).values_list(field, "duration_ms"):
        if duration is not None:
            durations[name].append(duration)
    return [
        Usage(
            r[field] or "(none)",
            r["calls"],
            r["errors"],
            _percentile(durations[r[field]], 0.5),
            _percentile(durations[r[field]], 0.95),
        )
        for r in top
    ]


def calls_over_time(calls: QuerySet[Any], window: str, now: dt.datetime) -> list[Bucket]:
    """Calls and errors per bucket of ``window``, every bucket present (empty ones as zero)."""
    _, span, trunc, width = WINDOWS[window]
    rows = (
        calls.annotate(bucket=trunc("at", tzinfo=dt.UTC))
        .values("bucket")
        .annotate(calls=Count("id"), errors=Count("id", filter=ERRORS))
        .order_by("bucket")
    )
    found = {r["bucket"]: (r["calls"], r["errors"]) for r in rows}
    start = _truncate(now - span, width)
    buckets = []
    while start <= now:
        total, errors = found.get(start, (0, 0))
        buckets.append(Bucket(start, total, errors))
        start += width
    return buckets


def _truncate(moment: dt.datetime, width: dt.timedelta) -> dt.datetime:
    moment = moment.astimezone(dt.UTC)
    if width >= dt.timedelta(days=1):
        return moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if width >= dt.timedelta(hours=1):
        return moment.replace(minute=0, second=0, microsecond=0)
    return moment.replace(second=0, microsecond=0)


def usage_summary(calls: QuerySet[Any], window: str, now: dt.datetime) -> dict[str, Any]:
    """Everything the dashboard shows for the call rows ``calls`` (already scoped and limited to the window)."""
    totals = calls.aggregate(calls=Count("id"), errors=Count("id", filter=ERRORS))
    return {
        "totals": totals,
        "tools": usage_by(calls, "target"),
        "clients": usage_by(calls, "client_name"),
        "timeline": calls_over_time(calls, window, now),
    }
