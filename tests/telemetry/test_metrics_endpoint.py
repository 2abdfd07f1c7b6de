"""``GET /metrics``: who may scrape it (bearer token, else loopback judged as the rate limits judge client
addresses), and what it answers (every process's metrics, tool runs counted at scrape time)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from mcp_infra.telemetry import metrics
from mcp_platform.jobs.models import ToolRun
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

TOKEN = "scrape-token-9d2c1f"


def scrape(client_address: str = "127.0.0.1", **headers: str) -> Any:
    return Client(REMOTE_ADDR=client_address).get("/metrics", **headers)


@pytest.fixture
def behind_proxy(settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TRUSTED_PROXIES": ["127.0.0.1/32", "10.0.0.0/8"]}


@pytest.fixture
def with_token(settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "METRICS_TOKEN": TOKEN}


def test_a_loopback_client_gets_every_metric_in_prometheus_text_format() -> None:
    metrics.REQUESTS.labels("scraped", "", "tools/list", "ok").inc()
    metrics.REQUEST_DURATION.labels("scraped", "", "tools/list").observe(0.003)
    response = scrape("127.0.0.1")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    body = response.content.decode()
    assert 'mcp_requests_total{method="tools/list",outcome="ok",server="",tenant="scraped"}' in body
    assert "# TYPE mcp_request_duration_seconds histogram" in body
    assert 'mcp_request_duration_seconds_bucket{le="0.005",method="tools/list",server="",tenant="scraped"}' in body
    assert scrape("::1").status_code == 200
    assert scrape("::ffff:127.0.0.1").status_code == 200


def test_a_public_client_is_refused_without_a_token() -> None:
    response = scrape("203.0.113.9")
    assert response.status_code == 403
    assert b"mcp_" not in response.content


def test_a_client_that_writes_a_loopback_forwarded_for_is_judged_on_its_own_address() -> None:
    # No trusted proxy: X-Forwarded-For is the client's own writing.
    assert scrape("203.0.113.9", HTTP_X_FORWARDED_FOR="127.0.0.1").status_code == 403


def test_behind_a_trusted_proxy_the_forwarded_public_address_is_not_loopback(behind_proxy: None) -> None:
    # The proxy runs on this machine: the peer is loopback, the client is not.
    assert scrape("127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 403
    # What a client wrote to the left of the proxy's own entry is not believed.
    assert scrape("127.0.0.1", HTTP_X_FORWARDED_FOR="127.0.0.1, 203.0.113.9").status_code == 403
    # A scraper on the proxy's machine, forwarded through trusted hops, is loopback.
    assert scrape("10.1.2.3", HTTP_X_FORWARDED_FOR="127.0.0.1").status_code == 200


def test_with_a_token_configured_only_its_bearer_may_scrape_from_anywhere(with_token: None) -> None:
    assert scrape("203.0.113.9", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    refused = scrape("127.0.0.1")
    assert refused.status_code == 401 and refused["WWW-Authenticate"].startswith("Bearer")
    assert scrape("127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {TOKEN}x").status_code == 401
    assert scrape("127.0.0.1", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 401


def test_tool_runs_are_counted_per_tenant_and_status_when_scraped() -> None:
    acme = TenantFactory(slug="acme-runs")
    soon = timezone.now() + timedelta(hours=1)
    for number, status in enumerate(["working", "working", "completed", "input_required"]):
        ToolRun.objects.create(
            id=f"run-{number}",
            tenant=acme,
            principal="user:1",
            protocol_version="2026-07-28",
            tool_name="slow",
            ttl_ms=3_600_000,
            expires_at=soon,
            status=status,
        )
    ToolRun.objects.create(
        id="expired",
        tenant=acme,
        principal="user:1",
        protocol_version="2026-07-28",
        tool_name="slow",
        ttl_ms=1,
        expires_at=timezone.now() - timedelta(seconds=1),
        status="working",
    )
    body = scrape().content.decode()
    assert 'mcp_tasks{status="working",tenant="acme-runs"} 2.0' in body
    assert 'mcp_tasks{status="completed",tenant="acme-runs"} 1.0' in body
    assert 'mcp_tasks{status="input_required",tenant="acme-runs"} 1.0' in body


def test_only_get_is_answered() -> None:
    assert Client(REMOTE_ADDR="127.0.0.1").post("/metrics").status_code == 405
