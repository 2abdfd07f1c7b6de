"""Usage figures: exact percentiles, and the histogram ones a month of calls uses, within a bucket of the exact;
calls over time in buckets on a labelled axis; counts in words; latency per upstream without a query per row."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from mcp_platform.activity import charts
from mcp_platform.activity.models import ActivityRecord
from mcp_platform.activity.usage import (
    Bucket,
    _histogram_percentile,
    _percentile,
    calls_over_time,
    upstream_calls,
    usage_by,
    usage_by_upstream,
)
from tenants.models import Upstream
from tests.factories import PromptFactory, TenantFactory, ToolFactory

pytestmark = pytest.mark.django_db


def test_exact_percentiles_interpolate_between_ranks() -> None:
    assert _percentile([10.0, 20.0, 30.0, 40.0], 0.5) == 25.0
    assert _percentile([], 0.5) is None


def test_histogram_percentiles_land_in_the_right_bucket() -> None:
    # Bucket 100 of 200 spans ln(1+ms) ≈ 6.62-6.68: about 750-800 ms.
    assert 740 < (_histogram_percentile([(100, 10)], 0.5) or 0) < 800
    assert _histogram_percentile([], 0.95) is None


def test_approximate_usage_stays_within_a_few_percent_of_the_exact() -> None:
    tenant = TenantFactory()
    rng = random.Random(3)
    now = timezone.now()
    ActivityRecord.objects.bulk_create(
        ActivityRecord(
            tenant=tenant, at=now, method="tools/call", target=f"t{i % 2}", duration_ms=rng.expovariate(1 / 40)
        )
        for i in range(2000)
    )
    calls = ActivityRecord.objects.filter(tenant=tenant)
    exact = {u.name: u for u in usage_by(calls, "target")}
    approximate = {u.name: u for u in usage_by(calls, "target", exact=False)}
    assert {name: u.calls for name, u in approximate.items()} == {name: u.calls for name, u in exact.items()}
    for name, u in exact.items():
        assert approximate[name].p50_ms == pytest.approx(u.p50_ms, rel=0.08)
        assert approximate[name].p95_ms == pytest.approx(u.p95_ms, rel=0.08)


def test_calls_fall_into_hourly_buckets_over_a_day_and_daily_ones_over_a_week() -> None:
    tenant = TenantFactory()
    now = dt.datetime(2026, 11, 29, 14, 30, tzinfo=dt.UTC)
    for at, outcome in ((now, "ok"), (now - dt.timedelta(minutes=20), "error"), (now - dt.timedelta(hours=5), "ok")):
        ActivityRecord.objects.create(tenant=tenant, at=at, method="tools/call", target="t", outcome=outcome)
    calls = ActivityRecord.objects.filter(tenant=tenant)

    day = calls_over_time(calls, "24h", now)
    week = calls_over_time(calls, "7d", now)

    assert len(day) == 25 and day[0].start == dt.datetime(2026, 11, 28, 14, tzinfo=dt.UTC)
    assert [(b.start.hour, b.calls, b.errors) for b in day if b.calls] == [(9, 1, 0), (14, 2, 1)]
    assert len(week) == 8 and week[-1] == Bucket(dt.datetime(2026, 11, 29, tzinfo=dt.UTC), 3, 1)


def test_the_time_axis_labels_every_third_hour_and_scales_to_a_round_number() -> None:
    start = dt.datetime(2026, 11, 28, 14, tzinfo=dt.UTC)
    buckets = [Bucket(start + dt.timedelta(hours=h), 7 if h == 2 else 0, 1 if h == 2 else 0) for h in range(25)]

    drawn = charts.timeline(buckets, "24h", lambda bucket: f"/log?at={bucket.start.hour}")

    assert [t.label for t in drawn.x_ticks] == [f"{h % 24:02d}:00" for h in range(15, 39, 3)]
    assert [t.label for t in drawn.y_ticks] == ["0", "4", "8"], "7 calls at most: the axis goes to 8"
    busiest = drawn.columns[2]
    assert busiest.title == "28 Nov 16:00 UTC: 7 calls, 1 error"
    assert busiest.href == "/log?at=16"
    assert busiest.calls_h == pytest.approx(charts.PLOT_HEIGHT * 7 / 8)
    assert drawn.columns[0].calls_h == 0 and drawn.bucket == "hour"
    assert charts.timeline([], "1h", str).columns == []


def test_counts_read_as_words_in_the_singular_and_the_plural() -> None:
    assert charts.calls_and_errors(1, 0) == "1 call, 0 errors"
    assert charts.calls_and_errors(2, 1) == "2 calls, 1 error"
    assert [charts.nice_ceiling(n) for n in (0, 1, 3, 7, 10, 11, 23, 240)] == [1, 1, 3, 8, 10, 20, 30, 300]


@pytest.mark.parametrize("exact", [True, False])
def test_latency_per_upstream_comes_from_the_calls_to_its_mirrored_items(
    exact: bool, django_assert_max_num_queries: Any
) -> None:
    tenant, other = TenantFactory(slug="acme"), TenantFactory(slug="globex")
    github = Upstream.objects.create(tenant=tenant, name="github", url="https://github.example/mcp")
    wiki = Upstream.objects.create(tenant=tenant, name="wiki", url="https://wiki.example/mcp")
    theirs = Upstream.objects.create(tenant=other, name="github", url="https://github.example/mcp")
    ToolFactory(tenant=tenant, name="gh_issues", upstream=github)
    ToolFactory(tenant=tenant, name="gh_pulls", upstream=github)
    PromptFactory(tenant=tenant, name="wiki_page", upstream=wiki)
    ToolFactory(tenant=tenant, name="local_tool")
    ToolFactory(tenant=other, name="gh_issues", upstream=theirs)
    now = timezone.now()

    def call(tenant: Any, method: str, target: str, ms: float, outcome: str = "ok") -> ActivityRecord:
        return ActivityRecord(tenant=tenant, at=now, method=method, target=target, duration_ms=ms, outcome=outcome)

    ActivityRecord.objects.bulk_create(
        [
            *(call(tenant, "tools/call", "gh_issues", ms) for ms in (10.0, 20.0, 30.0)),
            call(tenant, "tools/call", "gh_pulls", 40.0, "error"),
            call(tenant, "prompts/get", "wiki_page", 5.0),
            call(tenant, "tools/call", "wiki_page", 999.0),  # a tool's name, not the prompt's: not the wiki's
            call(tenant, "tools/call", "local_tool", 999.0),
            call(other, "tools/call", "gh_issues", 999.0),
        ]
    )
    calls = ActivityRecord.objects.filter(tenant=tenant)

    with django_assert_max_num_queries(5):  # three for the catalog, one or two for the figures: none per row
        upstreams = upstream_calls(tenant_ids=frozenset({tenant.pk}), with_tenant=False)
        usages = usage_by_upstream(calls, upstreams, exact=exact)

    assert [u.upstream_id for u in upstreams] == [github.pk, wiki.pk]
    assert [(u.name, u.calls, u.errors) for u in usages] == [("github", 4, 1), ("wiki", 1, 0)]
    github_usage = usages[0]
    if exact or connection.vendor != "postgresql":
        assert (github_usage.p50_ms, github_usage.p95_ms) == (25.0, pytest.approx(38.5))
    else:
        # The histogram's percentile is the nearest rank's call (20 ms of 10, 20, 30, 40), within its 4 %.
        assert github_usage.p50_ms == pytest.approx(20.0, rel=0.05)
    everyone = upstream_calls(tenant_ids=None, with_tenant=True)
    assert [u.label for u in everyone] == ["acme/github", "acme/wiki", "globex/github"]
    assert usage_by_upstream(calls, []) == []
