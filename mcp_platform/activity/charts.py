"""Server-rendered SVG charts for the usage dashboard (no script, no CDN): geometry computed here, drawn by the
template. Each chart is paired with a table of the same figures for screen readers and exact values."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_platform.activity.usage import Bucket, Usage

WIDTH = 720
HEIGHT = 160
BAR_HEIGHT = 18
LABEL_WIDTH = 220


@dataclass(frozen=True)
class Column:
    x: float
    width: float
    calls_y: float
    calls_h: float
    errors_y: float
    errors_h: float
    title: str


@dataclass(frozen=True)
class Row:
    y: float
    label: str
    value_width: float
    second_width: float
    text: str


def timeline_columns(buckets: list[Bucket], fmt: str) -> list[Column]:
    """Calls per bucket as columns, errors drawn over them from the baseline."""
    if not buckets:
        return []
    peak = max(b.calls for b in buckets) or 1
    step = WIDTH / len(buckets)
    columns = []
    for index, bucket in enumerate(buckets):
        calls_h = HEIGHT * bucket.calls / peak
        errors_h = HEIGHT * bucket.errors / peak
        columns.append(
            Column(
                x=round(index * step, 2),
                width=round(max(step - 1, 1), 2),
                calls_y=round(HEIGHT - calls_h, 2),
                calls_h=round(calls_h, 2),
                errors_y=round(HEIGHT - errors_h, 2),
                errors_h=round(errors_h, 2),
                title=f"{bucket.start.strftime(fmt)}: {bucket.calls} calls, {bucket.errors} errors",
            )
        )
    return columns


def latency_rows(usages: list[Usage]) -> list[Row]:
    """p95 latency per name as a bar with its p50 inside it."""
    peak = max((u.p95_ms or 0 for u in usages), default=0) or 1
    span = WIDTH - LABEL_WIDTH - 90
    return [
        Row(
            y=index * (BAR_HEIGHT + 6),
            label=usage.name[:32],
            value_width=round(span * (usage.p95_ms or 0) / peak, 2),
            second_width=round(span * (usage.p50_ms or 0) / peak, 2),
            text=f"p50 {usage.p50_ms or 0:.1f} / p95 {usage.p95_ms or 0:.1f} ms",
        )
        for index, usage in enumerate(usages)
    ]


def calls_rows(usages: list[Usage]) -> list[Row]:
    """Calls per name as a bar with its errors inside it."""
    peak = max((u.calls for u in usages), default=0) or 1
    span = WIDTH - LABEL_WIDTH - 90
    return [
        Row(
            y=index * (BAR_HEIGHT + 6),
            label=usage.name[:32],
            value_width=round(span * usage.calls / peak, 2),
            second_width=round(span * usage.errors / peak, 2),
            text=f"{usage.calls} calls, {usage.errors} errors",
        )
        for index, usage in enumerate(usages)
    ]


def rows_height(rows: list[Row]) -> int:
    return max(len(rows) * (BAR_HEIGHT + 6), BAR_HEIGHT)
