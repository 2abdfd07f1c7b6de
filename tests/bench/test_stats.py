"""Percentiles are nearest-rank, and repeated measurements are summarised by median and range."""

from __future__ import annotations

from bench.stats import percentile, spread, summarize


def test_nearest_rank_percentiles() -> None:
    ordered = list(range(1, 101))

    assert percentile(ordered, 0.50) == 50
    assert percentile(ordered, 0.99) == 99
    assert percentile(ordered, 1.0) == 100
    assert percentile([7], 0.99) == 7


def test_summary_is_in_microseconds() -> None:
    summary = summarize([3_000, 1_000, 2_000])

    assert summary["samples"] == 3
    assert summary["p50_us"] == 2.0
    assert summary["max_us"] == 3.0
    assert summary["mean_us"] == 2.0


def test_no_samples_give_no_percentiles() -> None:
    assert summarize([])["p99_us"] is None


def test_spread_ignores_missing_values() -> None:
    assert spread([3.0, None, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0}
    assert spread([None]) is None
