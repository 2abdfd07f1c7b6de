"""Usage figures: exact percentiles, and the histogram ones a month of calls uses, within a bucket of the exact."""

from __future__ import annotations

import random

import pytest
from django.utils import timezone

from mcp_platform.activity.models import ActivityRecord
from mcp_platform.activity.usage import _histogram_percentile, _percentile, usage_by
from tests.factories import TenantFactory

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
