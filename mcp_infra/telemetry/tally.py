"""The request path's metrics, tallied per process: what a request counts in memory, and the fold that adds it to
prometheus_client's multi-process files (``mcp_requests_total``, ``mcp_request_duration_seconds``,
``mcp_tool_calls_total``; for calls proxied to upstream servers ``mcp_upstream_calls_total`` and
``mcp_upstream_call_duration_seconds``; for HTTP tools' requests ``mcp_http_tool_calls_total`` and
``mcp_http_tool_call_duration_seconds``).

Why a tally: in multi-process mode every ``inc()`` takes prometheus_client's process-wide lock and writes an mmap'd
file, and a request made four of them (request counter, histogram bucket and sum, tool counter): 4-16 µs; a proxied
call three more (6-10 µs). Here a request adds to one list in a dict under a lock of its own (0.7 µs), and the
files are written once per label set per fold.

When the files see the counts: a daemon thread folds every ``METRICS_FOLD_SECONDS`` (default 1), ``/metrics``
folds this process's tally before it renders (a scrape of a process sees all its own requests), and the process's
exit folds what is left (``atexit``; servers stop on SIGTERM by returning normally). So another process's scrape
sees this process's requests within ``METRICS_FOLD_SECONDS``, and a process killed with SIGKILL loses at most what
it counted since its last fold. A forked child starts with an empty tally (its parent folds its own), and a fork
waits for a fold under way (whose writes hold prometheus_client's lock, which the child would inherit taken).

Why nothing is lost: the request path updates the tally only while holding ``_lock``, and a fold takes the whole
dict away under that same lock (it puts an empty one in its place), then writes the taken dict outside it. A
request therefore lands either in the dict the fold took or in the new one, never in one nobody reads. The lock is
uncontended but for the instant of the swap (about 0.2 µs a request). ``_folding`` lets one fold run at a time, so
the fold at exit waits for one under way instead of letting the interpreter end in its middle.

The histogram is written through prometheus_client internals, since no public call adds many observations at once
(``observe`` adds one value to one bucket and to the sum): ``histogram_add`` increments the child's ``_buckets[i]``
and ``_sum`` values, the ones ``observe`` increments, where bucket ``i`` holds the values ``<= _upper_bounds[i]``
and the multi-process collector derives ``_count`` and the cumulative ``le`` buckets from them.
``tests/telemetry/test_tally.py`` fails if a prometheus_client release changes any of that.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from bisect import bisect_left
from collections.abc import Sequence
from typing import Any, cast

from mcp_infra.conf import platform_settings
from mcp_infra.telemetry import metrics

logger = logging.getLogger(__name__)

# What a key of the tally starts with: which metrics its counts go to.
REQUEST = "request"  # then tenant, server, method label, outcome, tool label (tools/call only, else None)
UPSTREAM = "upstream"  # then tenant, upstream label, operation, outcome
HTTP_TOOL = "http_tool"  # then tenant, outcome
Key = tuple[str | None, ...]
# A call counted by labels that end in its outcome, and timed by the same labels without it.
_OUTCOME_METRICS = {
    UPSTREAM: (metrics.UPSTREAM_CALLS, metrics.UPSTREAM_DURATION),
    HTTP_TOOL: (metrics.HTTP_TOOL_CALLS, metrics.HTTP_TOOL_DURATION),
}


def histogram_add(child: Any, counts: Sequence[float], total: float) -> None:
    """Add observations to a labelled ``Histogram`` child at once: ``counts[i]`` of them in bucket ``i`` (the values
    ``<= upper bound i``; the last is ``+Inf``), whose values add up to ``total``.

    Raises ``ValueError`` when ``counts`` has not one entry per bucket of the child."""
    buckets = child._buckets
    if len(counts) != len(buckets):
        raise ValueError(f"{len(counts)} counts for a histogram of {len(buckets)} buckets")
    for value, count in zip(buckets, counts, strict=True):
        if count:
            value.inc(count)
    child._sum.inc(total)


class RequestTally:
    """This process's requests (and the upstream calls and HTTP tool requests they made) since the last fold: per
    label set, a count per latency bucket and their duration."""

    def __init__(self, buckets: Sequence[float] = metrics.LATENCY_BUCKETS, *, threaded: bool = True) -> None:
        """``threaded=False``: no folding thread, the owner calls ``fold`` (tests); the exit still folds."""
        self._threaded = threaded
        self._bounds = tuple(buckets)
        # One count per bucket, one for +Inf, then the sum of durations.
        self._size = len(self._bounds) + 2
        self._pending: dict[Key, list[float]] = {}
        # The request path's lock: held for one update, or by a fold for the swap of ``_pending``.
        self._lock = threading.Lock()
        # One fold at a time.
        self._folding = threading.Lock()
        self._stop = threading.Event()
        self._started = False
        self._atexit_registered = False
        # No fork in the middle of a fold: the fold thread holds prometheus_client's lock while it writes, and a
        # child forked then would find that lock taken forever.
        os.register_at_fork(before=self._before_fork, after_in_parent=self._after_fork, after_in_child=self._forked)

    def record(
        self, *, tenant: str, method: str, outcome: str, tool: str | None, duration: float, server: str = ""
    ) -> None:
        """Count one request (labels already bounded: ``metrics.method_label``, ``metrics.tool_labels``) to the
        tenant's server ``server`` ("" its default server)."""
        self._add((REQUEST, tenant, server, method, outcome, tool), duration)

    def record_upstream(self, *, tenant: str, upstream: str, operation: str, outcome: str, duration: float) -> None:
        """Count one call proxied to an upstream server (``upstream`` already bounded: ``metrics.upstream_labels``)."""
        self._add((UPSTREAM, tenant, upstream, operation, outcome), duration)

    def record_http_tool(self, *, tenant: str, outcome: str, duration: float) -> None:
        """Count one request an HTTP tool made (``outcome``: its status class, or ``error``)."""
        self._add((HTTP_TOOL, tenant, outcome), duration)

    def _add(self, key: Key, duration: float) -> None:
        if not self._started:
            self._start()
        bucket = bisect_left(self._bounds, duration)
        with self._lock:
            entry = self._pending.get(key)
            if entry is None:
                entry = self._pending[key] = [0.0] * self._size
            entry[bucket] += 1
            entry[-1] += duration

    def pending(self) -> int:
        """Calls counted (requests, upstream calls, HTTP tool requests) and not yet folded."""
        with self._lock:
            return int(sum(sum(entry[:-1]) for entry in self._pending.values()))

    def fold(self) -> int:
        """Add what this process counted since the last fold to the metrics files; the number of calls folded.

        Raises what prometheus_client raises writing its files (the requests taken are then lost)."""
        with self._folding:
            with self._lock:
                pending, self._pending = self._pending, {}
            return self._publish(pending)

    def close(self) -> None:
        """Stop folding in the background and fold what is left (the process is ending)."""
        self._stop.set()
        self.fold_logged()

    def _publish(self, pending: dict[Key, list[float]]) -> int:
        requests: dict[tuple[str, str, str, str], float] = {}
        tools: dict[tuple[str, str, str, str], float] = {}
        durations: dict[tuple[str, str, str], list[float]] = {}
        folded = 0.0
        for key, entry in pending.items():
            count = sum(entry[:-1])
            folded += count
            if key[0] != REQUEST:
                counter, histogram = _OUTCOME_METRICS[cast(str, key[0])]
                counter.labels(*key[1:]).inc(count)
                histogram_add(histogram.labels(*key[1:-1]), entry[:-1], entry[-1])
                continue
            _, tenant, server, method, outcome, tool = cast(tuple[str, str, str, str, str, str | None], key)
            requests[tenant, server, method, outcome] = requests.get((tenant, server, method, outcome), 0.0) + count
            if tool is not None:
                tools[tenant, server, tool, outcome] = tools.get((tenant, server, tool, outcome), 0.0) + count
            summed = durations.get((tenant, server, method))
            if summed is None:
                durations[tenant, server, method] = list(entry)
            else:
                for index, value in enumerate(entry):
                    summed[index] += value
        for labels, count in requests.items():
            metrics.REQUESTS.labels(*labels).inc(count)
        for labels, count in tools.items():
            metrics.TOOL_CALLS.labels(*labels).inc(count)
        for (tenant, server, method), entry in durations.items():
            histogram_add(metrics.REQUEST_DURATION.labels(tenant, server, method), entry[:-1], entry[-1])
        return int(folded)

    def fold_logged(self) -> None:
        """``fold``, a failure logged instead of raised (the folding thread, the exit, a scrape)."""
        try:
            self.fold()
        except Exception:  # a failed write must not end the folding thread, nor the process's exit
            logger.exception("could not add this process's request counts to the metrics files")

    def _start(self) -> None:
        """Start this process's folding thread, once (and once more in a forked child)."""
        with self._lock:
            if self._started:
                return
            self._started = True
            if self._threaded:
                interval = platform_settings.METRICS_FOLD_SECONDS
                thread = threading.Thread(
                    target=self._run, args=(interval, self._stop), name="metrics-fold", daemon=True
                )
                thread.start()
            if not self._atexit_registered:
                # Inherited by forked children, whose exit then folds their own tally.
                atexit.register(self.close)
                self._atexit_registered = True

    def _run(self, interval: float, stop: threading.Event) -> None:
        while not stop.wait(interval):
            self.fold_logged()

    def _before_fork(self) -> None:
        self._folding.acquire()

    def _after_fork(self) -> None:
        self._folding.release()

    def _forked(self) -> None:
        """In a forked child: no thread survived the fork, the locks may have been held by one (``_folding`` is, by
        the parent's ``_before_fork``), and the parent folds what it counted."""
        self._pending = {}
        self._lock = threading.Lock()
        self._folding = threading.Lock()
        self._stop = threading.Event()
        self._started = False


request_tally = RequestTally()


def http_tool_observe(*, tenant: str, status: int | None, started: float) -> None:
    """One request of an HTTP tool: its status class (or ``error`` when no response came) and duration."""
    outcome = f"{status // 100}xx" if status is not None else "error"
    request_tally.record_http_tool(tenant=tenant, outcome=outcome, duration=time.perf_counter() - started)


def upstream_observe(
    *, tenant_id: int, tenant: str, upstream: str, operation: str, outcome: str, started: float
) -> None:
    """One call proxied to an upstream MCP server."""
    request_tally.record_upstream(
        tenant=tenant,
        upstream=metrics.upstream_labels.label(tenant_id, upstream),
        operation=operation,
        outcome=outcome,
        duration=time.perf_counter() - started,
    )
