"""Percentiles and the median-and-spread summary of repeated measurements."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted, non-empty sequence."""
    rank = max(1, math.ceil(fraction * len(ordered)))
    return float(ordered[rank - 1])


def summarize(latencies_ns: list[int]) -> dict[str, Any]:
    """Latency percentiles in microseconds (all None without samples)."""
    if not latencies_ns:
        return {"samples": 0, "p50_us": None, "p90_us": None, "p99_us": None, "max_us": None, "mean_us": None}
    ordered = sorted(latencies_ns)
    return {
        "samples": len(ordered),
        "p50_us": percentile(ordered, 0.50) / 1000,
        "p90_us": percentile(ordered, 0.90) / 1000,
        "p99_us": percentile(ordered, 0.99) / 1000,
        "max_us": ordered[-1] / 1000,
        "mean_us": statistics.fmean(ordered) / 1000,
    }


def spread(values: Sequence[float | None]) -> dict[str, float] | None:
    """Median, min and max of repeated measurements (None when there are none)."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    return {"median": statistics.median(present), "min": min(present), "max": max(present)}
