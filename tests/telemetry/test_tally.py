"""The request metrics' per-process tally: what it folds into the multi-process files equals what was counted (in
the histogram's buckets too), racing folds lose nothing, a process's exit folds what is left, a forked child starts
empty, and the prometheus_client internals the fold writes through still behave like ``observe``."""

from __future__ import annotations

import math
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Histogram, multiprocess

from mcp_infra.telemetry import metrics
from mcp_infra.telemetry.tally import RequestTally, histogram_add, request_tally
from tests.telemetry.conftest import metric_value

REPO = Path(__file__).resolve().parents[2]

# Durations on, around and past the latency buckets' bounds, and zero.
DURATIONS = [0.0, 0.0004, 0.001, 0.0010001, 0.0025, 0.004, 0.05, 0.7, 2.5, 29.0, 60.0, 61.0, 3600.0]


def samples_by_suffix(name: str, **labels: str) -> dict[tuple[str, str], float]:
    """Every sample of histogram ``name`` with ``labels`` in the files, keyed by (suffix, le)."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=os.environ["PROMETHEUS_MULTIPROC_DIR"])
    found = {}
    for family in registry.collect():
        if family.name != name:
            continue
        for sample in family.samples:
            le = sample.labels.get("le", "")
            if {k: v for k, v in sample.labels.items() if k != "le"} == labels:
                found[sample.name.removeprefix(name), le] = sample.value
    return found


def test_the_fold_writes_the_histogram_observe_would_have_written() -> None:
    # Guards the prometheus_client internals histogram_add uses (_buckets, _sum, upper bounds, how the
    # multi-process collector reads them): a release that changes them fails here.
    reference_histogram = Histogram(
        "mcp_test_reference_duration_seconds",
        "Fed with observe() to compare the fold with.",
        ["tenant", "server", "method"],
        buckets=metrics.LATENCY_BUCKETS,
        registry=None,
    )
    tenant = f"guard-{secrets.token_hex(4)}"
    for duration in DURATIONS:
        request_tally.record(tenant=tenant, method="tools/list", outcome="ok", tool=None, duration=duration)
        reference_histogram.labels(tenant, "", "tools/list").observe(duration)
    request_tally.fold()
    folded = samples_by_suffix("mcp_request_duration_seconds", tenant=tenant, server="", method="tools/list")
    observed = samples_by_suffix("mcp_test_reference_duration_seconds", tenant=tenant, server="", method="tools/list")
    assert folded.keys() == observed.keys()
    assert len([key for key in folded if key[0] == "_bucket"]) == len(metrics.LATENCY_BUCKETS) + 1
    for key, value in observed.items():
        assert math.isclose(folded[key], value, rel_tol=1e-12), key
    assert folded["_count", ""] == len(DURATIONS)
    assert folded["_bucket", "0.001"] == 3, "a duration equal to a bound is in that bound's bucket"


def test_counts_for_other_buckets_than_the_histograms_are_refused() -> None:
    child = metrics.REQUEST_DURATION.labels("refused", "", "ping")
    with pytest.raises(ValueError):
        histogram_add(child, [1.0] * len(metrics.LATENCY_BUCKETS), 0.5)


def test_requests_tools_and_durations_are_folded_per_label_set() -> None:
    tenant = f"folded-{secrets.token_hex(4)}"
    ok = {"tenant": tenant, "server": "", "method": "tools/call", "outcome": "ok"}
    tally = RequestTally(threaded=False)
    for tool, outcome, duration in [("a", "ok", 0.002), ("a", "ok", 0.2), ("b", "ok", 0.02), ("b", "error", 1.0)]:
        tally.record(tenant=tenant, method="tools/call", outcome=outcome, tool=tool, duration=duration)
    tally.record(tenant=tenant, method="tools/list", outcome="ok", tool=None, duration=0.001)
    assert tally.pending() == 5
    assert metric_value("mcp_requests_total", **ok) == 0, "nothing reaches the files before a fold"
    assert tally.fold() == 5
    assert tally.pending() == 0
    assert metric_value("mcp_requests_total", **ok) == 3
    assert metric_value("mcp_requests_total", tenant=tenant, server="", method="tools/call", outcome="error") == 1
    assert metric_value("mcp_requests_total", tenant=tenant, server="", method="tools/list", outcome="ok") == 1
    assert metric_value("mcp_tool_calls_total", tenant=tenant, server="", tool="a", outcome="ok") == 2
    assert metric_value("mcp_tool_calls_total", tenant=tenant, server="", tool="b", outcome="error") == 1
    assert metric_value("mcp_request_duration_seconds_count", tenant=tenant, server="", method="tools/call") == 4
    assert math.isclose(
        metric_value("mcp_request_duration_seconds_sum", tenant=tenant, server="", method="tools/call"),
        1.222,
        rel_tol=1e-12,
    )


def test_upstream_calls_and_http_tool_requests_are_folded_to_their_own_metrics() -> None:
    tenant = f"outbound-{secrets.token_hex(4)}"
    up = {"tenant": tenant, "upstream": "weather", "operation": "tools/call"}
    tally = RequestTally(threaded=False)
    tally.record_upstream(**up, outcome="ok", duration=0.004)
    tally.record_upstream(**up, outcome="ok", duration=0.03)
    tally.record_upstream(**up, outcome="failure", duration=2.0)
    tally.record_http_tool(tenant=tenant, outcome="2xx", duration=0.01)
    tally.record_http_tool(tenant=tenant, outcome="error", duration=0.5)
    assert tally.pending() == 5
    assert metric_value("mcp_upstream_calls_total", **up, outcome="ok") == 0, "nothing reaches the files before a fold"
    assert tally.fold() == 5
    assert metric_value("mcp_upstream_calls_total", **up, outcome="ok") == 2
    assert metric_value("mcp_upstream_calls_total", **up, outcome="failure") == 1
    assert metric_value("mcp_upstream_call_duration_seconds_count", **up) == 3
    assert math.isclose(metric_value("mcp_upstream_call_duration_seconds_sum", **up), 2.034, rel_tol=1e-12)
    assert metric_value("mcp_upstream_call_duration_seconds_bucket", **up, le="0.005") == 1
    assert metric_value("mcp_http_tool_calls_total", tenant=tenant, outcome="2xx") == 1
    assert metric_value("mcp_http_tool_calls_total", tenant=tenant, outcome="error") == 1
    assert metric_value("mcp_http_tool_call_duration_seconds_count", tenant=tenant) == 2
    assert metric_value("mcp_requests_total", tenant=tenant, server="", method="tools/call", outcome="ok") == 0


def test_requests_counted_while_folds_run_are_all_folded() -> None:
    tenant = f"racing-{secrets.token_hex(4)}"
    threads, per_thread = 4, 20_000
    tally = RequestTally(threaded=False)

    def count() -> None:
        for _ in range(per_thread):
            tally.record(tenant=tenant, method="ping", outcome="ok", tool=None, duration=0.0001)

    switch = sys.getswitchinterval()
    # Threads switch every few bytecodes: a request caught between reading the dict and updating it is likely.
    sys.setswitchinterval(1e-6)
    try:
        counting = [threading.Thread(target=count) for _ in range(threads)]
        for thread in counting:
            thread.start()
        folds = 0
        while any(thread.is_alive() for thread in counting):
            tally.fold()
            folds += 1
        for thread in counting:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    tally.fold()
    assert folds > 1
    assert (
        metric_value("mcp_requests_total", tenant=tenant, server="", method="ping", outcome="ok")
        == threads * per_thread
    )


EXITING_PROCESS = """
import sys, time, django
django.setup()
from mcp_platform.observe.calls import CallInfo, observed_call
from mcp_infra.telemetry.tally import request_tally

for number in range(int(sys.argv[1])):
    info = CallInfo(
        tenant_id=1, tenant_slug="leaving", method="tools/call", target="echo", principal="", client_id="",
        client_name="exit-test", client_version="1", protocol_version="2026-07-28", transport="streamable-http",
        request_id=str(number), started=time.perf_counter(), started_at=time.time(), arguments=None, headers=None,
    )
    with observed_call(info) as call:
        call.succeed({"content": []})
print(request_tally.pending())
"""


def test_a_process_that_exits_normally_folds_every_request_it_counted(tmp_path: Path) -> None:
    calls = 1000
    directory = tmp_path / "prometheus"
    directory.mkdir()
    env = {
        **os.environ,
        "MCP_VAR_DIR": str(tmp_path),
        "PROMETHEUS_MULTIPROC_DIR": str(directory),
        "DJANGO_SETTINGS_MODULE": "mcp_platform.settings",
        # No fold before the exit: only the one at exit can have written the files.
        "MCP_METRICS_FOLD_SECONDS": "60",
        "MCP_ACTIVITY_LOG": "0",
    }
    done = subprocess.run(
        [sys.executable, "-c", EXITING_PROCESS, str(calls)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(calls), "the requests were still in memory when the process ended"
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(directory))
    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value for family in registry.collect() for s in family.samples
    }
    requests = (("method", "tools/call"), ("outcome", "ok"), ("server", ""), ("tenant", "leaving"))
    assert found["mcp_requests_total", requests] == calls
    tool = (("outcome", "ok"), ("server", ""), ("tenant", "leaving"), ("tool", "echo"))
    assert found["mcp_tool_calls_total", tool] == calls
    count = found[
        "mcp_request_duration_seconds_count", (("method", "tools/call"), ("server", ""), ("tenant", "leaving"))
    ]
    assert count == calls


def test_a_forked_child_starts_with_nothing_to_fold_and_folds_its_own() -> None:
    tenant = f"forking-{secrets.token_hex(4)}"
    labels = {"tenant": tenant, "server": "", "method": "tools/list", "outcome": "ok"}
    tally = RequestTally(threaded=False)
    for _ in range(5):
        tally.record(tenant=tenant, method="tools/list", outcome="ok", tool=None, duration=0.001)
    child = os.fork()
    if child == 0:  # the child: never returns into the test run
        status = 1
        try:
            if tally.pending() == 0:
                for _ in range(3):
                    tally.record(tenant=tenant, method="tools/list", outcome="ok", tool=None, duration=0.001)
                tally.fold()
                status = 0
        finally:
            os._exit(status)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child saw its parent's requests as its own"
    assert metric_value("mcp_requests_total", **labels) == 3, "the child folded its own, into its own file"
    assert tally.pending() == 5, "the parent keeps its own"
    tally.fold()
    assert metric_value("mcp_requests_total", **labels) == 5 + 3


def test_a_fork_waits_for_a_fold_under_way_so_the_child_can_write_metrics() -> None:
    # The fold holds prometheus_client's lock while it writes; a child forked in that instant would inherit the
    # lock taken and hang on its first metric.
    tenant = f"folding-{secrets.token_hex(4)}"
    tally = RequestTally(threaded=False)
    stop = threading.Event()

    def fold_forever() -> None:
        while not stop.is_set():
            for number in range(64):
                tally.record(tenant=tenant, method="ping", outcome="ok", tool=f"t{number}", duration=0.001 * number)
            tally.fold()

    folding = threading.Thread(target=fold_forever)
    folding.start()
    try:
        for _ in range(20):
            child = os.fork()
            if child == 0:  # the child: never returns into the test run
                try:
                    metrics.REQUESTS.labels(tenant, "", "ping", "child").inc()
                finally:
                    os._exit(0)
            deadline = time.monotonic() + 10
            while os.waitpid(child, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    os.kill(child, signal.SIGKILL)
                    os.waitpid(child, 0)
                    pytest.fail("a child forked during a fold hung on prometheus_client's lock")
                time.sleep(0.01)
    finally:
        stop.set()
        folding.join()
    assert metric_value("mcp_requests_total", tenant=tenant, server="", method="ping", outcome="child") == 20
