"""``GET /metrics``: every process's metrics of this host in Prometheus text format (this process's request counts
folded in first), plus the tool runs counted at scrape time. A Django view, so it stays off the MCP endpoint's path
(the gateway only routes ``/t/``).

Who may scrape (``telemetry.access``): with ``MCP_METRICS_TOKEN`` set, whoever presents it as a bearer token;
without it, loopback clients only.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from mcp_infra.conf import platform_settings
from mcp_infra.telemetry.tally import request_tally
from mcp_platform.jobs.selectors import tool_run_status_counts
from mcp_platform.oauth.throttling import client_address
from mcp_platform.telemetry.access import is_loopback, presents_metrics_token

# Bounds the scrape-time query (rows of tenant and status).
TASK_ROWS_LIMIT = 5000
_LIVE_GAUGE_FILE = re.compile(r"gauge_live\w+?_(\d+)\.db$")


class ToolRunCollector(Collector):
    """``mcp_tasks{tenant,status}``: unexpired tool runs, counted by one grouped query when scraped."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "mcp_tasks", "Unexpired tool runs (tasks) by tenant and status.", labels=["tenant", "status"]
        )
        for slug, status, count in tool_run_status_counts(limit=TASK_ROWS_LIMIT):
            family.add_metric([slug, status], count)
        yield family


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_dead_processes(path: str) -> list[int]:
    """Drop the live gauges (open streams) of processes that died without saying so (``kill -9``, OOM); their
    counters stay, as Prometheus expects of counters. The pids reaped."""
    reaped = []
    for name in glob.glob(os.path.join(path, "gauge_live*_*.db")):
        match = _LIVE_GAUGE_FILE.search(name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid not in reaped and not _alive(pid):
            multiprocess.mark_process_dead(pid, path)
            reaped.append(pid)
    return reaped


def scrape_refusal(request: HttpRequest) -> HttpResponse | None:
    """None when ``request`` may scrape; else the answer (401 without the configured token, 403 off loopback)."""
    if platform_settings.METRICS_TOKEN:
        if presents_metrics_token(request.headers.get("Authorization", "")):
            return None
        refusal = HttpResponse("A bearer token is required.\n", status=401, content_type="text/plain")
        refusal["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return refusal
    if is_loopback(client_address(request.META)):
        return None
    return HttpResponse("Metrics are served to loopback clients only.\n", status=403, content_type="text/plain")


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    refusal = scrape_refusal(request)
    if refusal is not None:
        return refusal
    path = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    # This process's own requests, counted in memory, are in the files before they are read. A fold that fails
    # (a full disk) is logged: the scrape still shows what the files hold.
    request_tally.fold_logged()
    reap_dead_processes(path)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=path)
    registry.register(ToolRunCollector())
    response = HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response
