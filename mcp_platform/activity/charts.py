"""The usage dashboard's charts, drawn by the server (no script, no CDN): the calls over time as SVG columns on a
labelled time axis, and per tool, client or upstream a table row whose bars are sized here. Every column and row
links to the activity log filtered to it; the figures are also in tables, for screen readers and exact values."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from mcp_platform.activity.usage import Bucket, Usage

# The timeline's drawing: the plot area inside margins that hold the axes' labels.
WIDTH = 720
HEIGHT = 200
LEFT = 48
RIGHT = 8
TOP = 10
BOTTOM = 30
PLOT_WIDTH = WIDTH - LEFT - RIGHT
PLOT_HEIGHT = HEIGHT - TOP - BOTTOM


def counted(number: int, word: str) -> str:
    """``1 call``, ``2 calls``, ``0 errors``."""
    return f"{number} {word}" if number == 1 else f"{number} {word}s"


def calls_and_errors(calls: int, errors: int) -> str:
    return f"{counted(calls, 'call')}, {counted(errors, 'error')}"


@dataclass(frozen=True)
class Axis:
    """How a window's time axis reads: the text of a bucket in a tooltip and in a tick label, which buckets get a
    tick label, and what one bucket is called ("minute", "hour", "day")."""

    title_format: str
    tick_format: str
    ticked: Callable[[dt.datetime], bool]
    bucket: str


AXES = {
    "1h": Axis("%H:%M", "%H:%M", lambda moment: moment.minute % 10 == 0, "minute"),
    "24h": Axis("%d %b %H:00", "%H:00", lambda moment: moment.hour % 3 == 0, "hour"),
    "7d": Axis("%a %d %b", "%a %d", lambda moment: True, "day"),
    "30d": Axis("%d %b", "%d %b", lambda moment: moment.toordinal() % 5 == 0, "day"),
}


@dataclass(frozen=True)
class Column:
    x: float
    width: float
    calls_y: float
    calls_h: float
    errors_y: float
    errors_h: float
    title: str
    href: str
    calls: int
    errors: int
    when: str


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Timeline:
    columns: list[Column]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    bucket: str


def nice_ceiling(value: int) -> int:
    """The smallest of 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, ... at least ``value`` (at least 1): the top of the calls
    axis, a round number near the busiest column."""
    if value <= 1:
        return 1
    magnitude = 10 ** (len(str(value)) - 1)
    for step in (1, 2, 3, 4, 5, 6, 8, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def timeline(buckets: list[Bucket], window: str, href: Callable[[Bucket], str]) -> Timeline:
    """Calls per bucket as columns (errors drawn over them from the baseline) on a time axis labelled per
    ``window``, and a calls axis from 0 to a round number; ``href(bucket)`` is the log of that bucket's calls."""
    axis = AXES[window]
    top = nice_ceiling(max((b.calls for b in buckets), default=0))
    step = PLOT_WIDTH / max(len(buckets), 1)
    columns, x_ticks = [], []
    for index, bucket in enumerate(buckets):
        calls_h = PLOT_HEIGHT * bucket.calls / top
        errors_h = PLOT_HEIGHT * bucket.errors / top
        x = LEFT + index * step
        when = bucket.start.strftime(axis.title_format)
        columns.append(
            Column(
                x=round(x, 2),
                width=round(max(step - 1, 1), 2),
                calls_y=round(TOP + PLOT_HEIGHT - calls_h, 2),
                calls_h=round(calls_h, 2),
                errors_y=round(TOP + PLOT_HEIGHT - errors_h, 2),
                errors_h=round(errors_h, 2),
                title=f"{when} UTC: {calls_and_errors(bucket.calls, bucket.errors)}",
                href=href(bucket),
                calls=bucket.calls,
                errors=bucket.errors,
                when=when,
            )
        )
        if axis.ticked(bucket.start):
            x_ticks.append(Tick(round(x + step / 2, 2), bucket.start.strftime(axis.tick_format)))
    values = (0, top // 2, top) if top % 2 == 0 else (0, top)
    y_ticks = [Tick(round(TOP + PLOT_HEIGHT - PLOT_HEIGHT * v / top, 2), str(v)) for v in values]
    return Timeline(columns, x_ticks, y_ticks, axis.bucket)


@dataclass(frozen=True)
class Row:
    """One tool's, client's or upstream's figures with its bars (percentages of the widest) and its log."""

    usage: Usage
    href: str
    calls_pct: float
    errors_pct: float
    p50_pct: float
    p95_pct: float

    @property
    def calls_text(self) -> str:
        return calls_and_errors(self.usage.calls, self.usage.errors)


def rows(usages: list[Usage], href: Callable[[Usage], str]) -> list[Row]:
    """Bars for a table of usages: calls (errors inside) scaled to the busiest, p95 (p50 inside) to the slowest."""
    calls_peak = max((u.calls for u in usages), default=0) or 1
    latency_peak = max((u.p95_ms or 0 for u in usages), default=0) or 1
    return [
        Row(
            usage=usage,
            href=href(usage),
            calls_pct=round(100 * usage.calls / calls_peak, 1),
            errors_pct=round(100 * usage.errors / calls_peak, 1),
            p50_pct=round(100 * (usage.p50_ms or 0) / latency_peak, 1),
            p95_pct=round(100 * (usage.p95_ms or 0) / latency_peak, 1),
        )
        for usage in usages
    ]
