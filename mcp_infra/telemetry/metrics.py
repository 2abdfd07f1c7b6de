"""The platform's Prometheus metrics: defined once at import, with the same names in every process, and the rules
that keep their labels bounded (known methods only; at most ``METRICS_MAX_TOOLS_PER_TENANT`` tool or upstream
names per tenant and process, the rest counted as ``_other``).

Values live in prometheus_client's multi-process files (``PROMETHEUS_MULTIPROC_DIR``, set by the settings before
this module imports prometheus_client), so ``/metrics`` on any web process adds up every process of the host.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import Counter, Gauge, Histogram, multiprocess

from mcp_core.dispatch import HANDSHAKE_METHODS, STATELESS_METHODS
from mcp_infra.conf import platform_settings

# A process that reuses a dead process's pid must not start from that process's live gauges (open streams).
if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    multiprocess.mark_process_dead(os.getpid())

OTHER = "_other"
# The method label takes only methods the platform serves: a client may send any string as a method.
KNOWN_METHODS: frozenset[str] = frozenset(
    {*HANDSHAKE_METHODS, *STATELESS_METHODS, "initialize", "subscriptions/listen", "notifications/initialized"}
)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
TASK_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)

# ``server``: the tenant's named server a request went to ("" for its default server). Bounded like the tenant: an
# admin creates servers, a client cannot invent one (an unknown server's URL is refused before any request runs).
REQUESTS = Counter(
    "mcp_requests",
    "JSON-RPC requests answered, by tenant, server, method and outcome.",
    ["tenant", "server", "method", "outcome"],
)
REQUEST_DURATION = Histogram(
    "mcp_request_duration_seconds",
    "Time from a JSON-RPC request's dispatch to its outcome.",
    ["tenant", "server", "method"],
    buckets=LATENCY_BUCKETS,
)
TOOL_CALLS = Counter(
    "mcp_tool_calls",
    "tools/call requests in both protocol eras, by tenant, server, tool and outcome.",
    ["tenant", "server", "tool", "outcome"],
)
OPEN_STREAMS = Gauge(
    "mcp_open_streams",
    "SSE streams open now (get: session GET streams, listen: subscriptions/listen, legacy_sse: 2024-11-05 "
    "streams, post: POST responses that turned into streams).",
    ["tenant", "kind"],
    multiprocess_mode="livesum",
)
UPSTREAM_CALLS = Counter(
    "mcp_upstream_calls", "Calls proxied to upstream MCP servers.", ["tenant", "upstream", "operation", "outcome"]
)
UPSTREAM_DURATION = Histogram(
    "mcp_upstream_call_duration_seconds",
    "Duration of calls proxied to upstream MCP servers.",
    ["tenant", "upstream", "operation"],
    buckets=LATENCY_BUCKETS,
)
HTTP_TOOL_CALLS = Counter(
    "mcp_http_tool_calls", "Requests made by HTTP tools, by outcome (2xx..5xx, or error).", ["tenant", "outcome"]
)
HTTP_TOOL_DURATION = Histogram(
    "mcp_http_tool_call_duration_seconds", "Duration of HTTP tools' requests.", ["tenant"], buckets=LATENCY_BUCKETS
)
RATE_LIMITED = Counter(
    "mcp_rate_limited",
    "Requests refused by a rate limit, by tenant and by the limit that refused.",
    ["tenant", "limit"],
)
RATE_LIMIT_BACKEND_FAILURES = Counter(
    "mcp_rate_limit_backend_failures",
    "Rate-limit checks let through unchecked because the bucket store (Redis) could not be reached.",
)
# Labelled (with one value) so that no process writes a metrics file before it has something to count: every
# ``manage.py`` command loads this module.
LOG_LINES_DROPPED = Counter(
    "mcp_log_lines_dropped",
    "JSON request log lines dropped because the writer fell behind (LOG_FORMAT=json).",
    ["logger"],
)
CELERY_TASKS = Counter("mcp_celery_tasks", "Celery task runs finished, by task and state.", ["task", "state"])
CELERY_TASK_DURATION = Histogram(
    "mcp_celery_task_duration_seconds", "Duration of Celery task runs in the worker.", ["task"], buckets=TASK_BUCKETS
)


def method_label(method: str) -> str:
    return method if method in KNOWN_METHODS else OTHER


class NameLabels:
    """Tenant-controlled names (tools, upstreams) admitted as label values, at most ``limit`` per tenant in this
    process: a tenant with thousands of tools cannot multiply the series every scrape carries. Process-local on
    purpose (a bound, not a truth): across N processes a tenant shows at most N times limit names."""

    def __init__(self) -> None:
        self._seen: dict[int, set[str]] = {}
        self._lock = threading.Lock()

    def label(self, tenant_id: int, name: str) -> str:
        names = self._seen.get(tenant_id)
        if names is not None and name in names:
            return name
        with self._lock:
            names = self._seen.setdefault(tenant_id, set())
            if name in names:
                return name
            if len(names) >= platform_settings.METRICS_MAX_TOOLS_PER_TENANT:
                return OTHER
            names.add(name)
            return name


tool_labels = NameLabels()
upstream_labels = NameLabels()


@contextlib.contextmanager
def stream_open(*, tenant: str, kind: str) -> Iterator[None]:
    """Count an SSE stream as open for as long as the block runs."""
    gauge = OPEN_STREAMS.labels(tenant, kind)
    gauge.inc()
    try:
        yield
    finally:
        gauge.dec()


def tenant_label(row: Any) -> str:
    """The slug of a catalog row's tenant when the row holds it (the catalog puts it there), else its id: never a
    query on the call's path."""
    if type(row).tenant.is_cached(row):
        return str(row.tenant.slug)
    return f"id:{row.tenant_id}"
