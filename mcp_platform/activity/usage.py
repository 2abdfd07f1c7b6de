"""Usage figures from activity rows: calls, errors and p50/p95 latency per tool, per client, per server and per
upstream, and calls over time.

Percentiles are computed by PostgreSQL (``percentile_cont``, or over 30 days from a histogram it counts); other
databases (SQLite, embedded) get them from the durations in Python, which suits their small logs.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.db import connection
from django.db.models import (
    Aggregate,
    Case,
    CharField,
    Count,
    F,
    FloatField,
    Func,
    IntegerField,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import TruncDay, TruncHour, TruncMinute

from tenants.models import Prompt, Resource, Tool

WINDOWS: dict[str, tuple[str, dt.timedelta, Any, dt.timedelta]] = {
    # key: (label, span, bucket function, bucket width)
    "1h": ("Last hour", dt.timedelta(hours=1), TruncMinute, dt.timedelta(minutes=1)),
    "24h": ("Last 24 hours", dt.timedelta(days=1), TruncHour, dt.timedelta(hours=1)),
    "7d": ("Last 7 days", dt.timedelta(days=7), TruncDay, dt.timedelta(days=1)),
    "30d": ("Last 30 days", dt.timedelta(days=30), TruncDay, dt.timedelta(days=1)),
}
TOP = 20
# How the figures name a tenant's default server (a call's stored server is "").
DEFAULT_SERVER_NAME = "(default server)"


class Percentiles(Aggregate):
    """PostgreSQL's ``percentile_cont(ARRAY[p50, p95]) WITHIN GROUP (ORDER BY expr)``: both from one sort."""

    function = "percentile_cont"
    template = "%(function)s(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = ArrayField(FloatField())


@dataclass(frozen=True)
class Usage:
    """One group's figures: ``name`` as shown ("(none)" for an empty value), ``value`` the grouped value itself."""

    name: str
    calls: int
    errors: int
    p50_ms: float | None
    p95_ms: float | None
    value: str = ""


def _usage(value: str | None, calls: int, errors: int, p50: float | None, p95: float | None) -> Usage:
    return Usage(value or "(none)", calls, errors, p50, p95, value or "")


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


def usage_by(calls: QuerySet[Any], field: str, *, exact: bool = True) -> list[Usage]:
    """Per value of ``field`` (``target`` or ``client_name``) of the call rows: the busiest ``TOP`` first.

    ``exact=False`` (PostgreSQL): percentiles from a log-scale histogram counted by the database (within ~4%),
    without the per-group sort that makes exact ones slow over a month of calls."""
    grouped = calls.values(field).annotate(calls=Count("id"), errors=Count("id", filter=ERRORS))
    if connection.vendor == "postgresql" and not exact:
        return _usage_from_histogram(calls, field)
    if connection.vendor == "postgresql":
        rows = grouped.annotate(p=Percentiles(F("duration_ms"))).order_by("-calls", field)[:TOP]
        return [_usage(r[field], r["calls"], r["errors"], *(r["p"] or (None, None))) for r in rows]
    top = list(grouped.order_by("-calls", field)[:TOP])
    durations: dict[str, list[float]] = defaultdict(list)
    names = [r[field] for r in top]
    for name, duration in calls.filter(**{f"{field}__in": names}).values_list(field, "duration_ms"):
        if duration is not None:
            durations[name].append(duration)
    return [
        _usage(
            r[field],
            r["calls"],
            r["errors"],
            _percentile(durations[r[field]], 0.5),
            _percentile(durations[r[field]], 0.95),
        )
        for r in top
    ]


# Log-scale latency buckets: ln(1 + ms) from 0 to ln(1 + 10 minutes) in HISTOGRAM_BUCKETS steps (~7% wide).
HISTOGRAM_BUCKETS = 200
HISTOGRAM_TOP = math.log1p(600_000.0)


class LatencyBucket(Func):
    template = f"width_bucket(ln(1 + greatest(%(expressions)s, 0)), 0, {HISTOGRAM_TOP!r}, {HISTOGRAM_BUCKETS})"
    output_field = IntegerField()


def _bucket_value(bucket: int) -> float:
    """The middle of a bucket, in milliseconds (0: under the first bound; past the last: the top)."""
    step = HISTOGRAM_TOP / HISTOGRAM_BUCKETS
    middle = (min(max(bucket, 1), HISTOGRAM_BUCKETS) - 0.5) * step
    return math.expm1(middle)


def _histogram_percentile(counts: list[tuple[int, int]], fraction: float) -> float | None:
    total = sum(n for _, n in counts)
    if total == 0:
        return None
    rank = fraction * total
    seen = 0
    for bucket, n in sorted(counts):
        seen += n
        if seen >= rank:
            return _bucket_value(bucket)
    return _bucket_value(sorted(counts)[-1][0])


def _usage_from_histogram(calls: QuerySet[Any], field: str) -> list[Usage]:
    rows = (
        calls.exclude(duration_ms=None)
        .annotate(bucket=LatencyBucket(F("duration_ms")))
        .values(field, "bucket")
        .annotate(calls=Count("id"), errors=Count("id", filter=ERRORS))
        .order_by()
    )
    per_name: dict[str, list[tuple[int, int]]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    for row in rows:
        per_name[row[field]].append((row["bucket"], row["calls"]))
        errors[row[field]] += row["errors"]
    totals = sorted(((sum(n for _, n in b), name) for name, b in per_name.items()), key=lambda t: (-t[0], t[1]))
    return [
        _usage(
            name,
            count,
            errors[name],
            _histogram_percentile(per_name[name], 0.5),
            _histogram_percentile(per_name[name], 0.95),
        )
        for count, name in totals[:TOP]
    ]


@dataclass(frozen=True)
class UpstreamCalls:
    """The calls served by one upstream: those to the tools, resources and prompts mirrored from it (``condition``),
    shown as ``label`` (its name, with its tenant's slug when several tenants are shown)."""

    upstream_id: int
    label: str
    condition: Q


# The catalog rows mirrored from upstreams, and how a call names each: (model, the call's method, its target field).
_MIRRORED: tuple[tuple[Any, str, str], ...] = (
    (Tool, "tools/call", "name"),
    (Resource, "resources/read", "uri"),
    (Prompt, "prompts/get", "name"),
)


def upstream_calls(*, tenant_ids: frozenset[int] | None, with_tenant: bool) -> list[UpstreamCalls]:
    """Per upstream of ``tenant_ids`` (None: every tenant's), which calls it served, from the items mirrored from it
    now (a call recorded before an item was renamed or removed is not counted). One query per kind of item."""
    targets: dict[tuple[int, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    tenant_of: dict[tuple[int, str], int] = {}
    for model, method, field in _MIRRORED:
        items = model.objects.filter(upstream__isnull=False)
        if tenant_ids is not None:
            items = items.filter(tenant_id__in=tenant_ids)
        rows = items.values_list("tenant_id", "tenant__slug", "upstream_id", "upstream__name", field)
        for tenant_id, slug, upstream_id, name, target in rows:
            key = (upstream_id, f"{slug}/{name}" if with_tenant else name)
            targets[key][method].append(target)
            tenant_of[key] = tenant_id
    found = []
    for key, by_method in sorted(targets.items(), key=lambda item: item[0][1]):
        condition = Q()
        for method, names in by_method.items():
            condition |= Q(method=method, target__in=names)
        found.append(UpstreamCalls(key[0], key[1], Q(tenant_id=tenant_of[key]) & condition))
    return found


def usage_by_upstream(calls: QuerySet[Any], upstreams: list[UpstreamCalls], *, exact: bool = True) -> list[Usage]:
    """Calls, errors and p50/p95 latency per upstream, from the calls to its mirrored items: the busiest first. The
    database groups the calls by upstream (one ``CASE`` branch per upstream), as ``usage_by`` groups by tool."""
    if not upstreams:
        return []
    served = Q()
    for upstream in upstreams:
        served |= upstream.condition
    which = Case(
        *(When(upstream.condition, then=Value(upstream.label)) for upstream in upstreams),
        default=Value(""),
        output_field=CharField(),
    )
    return usage_by(calls.filter(served).annotate(upstream=which), "upstream", exact=exact)


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


def usage_summary(
    calls: QuerySet[Any], window: str, now: dt.datetime, upstreams: list[UpstreamCalls] | None = None
) -> dict[str, Any]:
    """Everything the dashboard shows for the call rows ``calls`` (already scoped and limited to the window), with
    the latency per upstream of ``upstreams`` (``upstream_calls``)."""
    timeline = calls_over_time(calls, window, now)
    # The totals are the timeline's sums: one scan of the rows fewer.
    totals = {"calls": sum(b.calls for b in timeline), "errors": sum(b.errors for b in timeline)}
    return {
        "totals": totals,
        # A month of calls is too many to sort per group on every page view: approximate percentiles there.
        "tools": usage_by(calls, "target", exact=window != "30d"),
        "clients": usage_by(calls, "client_name", exact=window != "30d"),
        "servers": [
            replace(usage, name=usage.value or DEFAULT_SERVER_NAME)
            for usage in usage_by(calls, "server", exact=window != "30d")
        ],
        "upstreams": usage_by_upstream(calls, upstreams or [], exact=window != "30d"),
        "timeline": timeline,
    }
