"""Reading the platform's metrics as a scrape would: this process's request tally folded in, then every process's
files under ``PROMETHEUS_MULTIPROC_DIR``."""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, multiprocess

from mcp_infra.telemetry.tally import request_tally
from tests.gateway.conftest import conformance  # noqa: F401  (the conformance tenant, for these tests too)


def metric_value(name: str, **labels: str) -> float:
    """The current value of sample ``name`` with exactly ``labels``, added over every process; 0 when absent
    (tests compare before and after, since the files outlive a test run)."""
    request_tally.fold()
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=os.environ["PROMETHEUS_MULTIPROC_DIR"])
    total = 0.0
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                total += sample.value
    return total
