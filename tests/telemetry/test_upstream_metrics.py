"""Calls proxied to a real SDK upstream process are counted and timed per tenant, upstream and outcome."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.test import override_settings

from mcp_core.env import Env, ServerIdentity
from mcp_core.features.tools import call_tool
from tenants.catalog import TenantCatalog
from tenants.federation.services import upstream_add
from tenants.models import Tenant
from tests.e2e.upstreams import UpstreamServer, upstream_server
from tests.factories import TenantFactory
from tests.support import RecordingOutbound
from tests.telemetry.conftest import metric_value

pytestmark = pytest.mark.django_db


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[UpstreamServer]:
    # The outbound door refuses loopback unless a deployment allows it; this test does, explicitly.
    allowed = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}
    with override_settings(MCP_PLATFORM=allowed), ExitStack() as stack:
        yield upstream_server(stack, tmp_path / "upstream")


def call(tenant: Tenant, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        env = Env(
            version="2025-11-25",
            catalog=TenantCatalog(tenant),
            outbound=RecordingOutbound(),
            server=ServerIdentity("t", "1"),
        )
        return await call_tool({"name": name, "arguments": arguments}, env)

    return async_to_sync(run)()


def test_an_upstream_call_and_an_unreachable_upstream_are_counted_apart(upstream: UpstreamServer) -> None:
    tenant = TenantFactory(slug="federating")
    upstream_add(tenant=tenant, name="up", url=upstream.url)
    labels = {"tenant": "federating", "upstream": "up", "operation": "tools/call"}
    before_ok = metric_value("mcp_upstream_calls_total", **labels, outcome="ok")
    before_failure = metric_value("mcp_upstream_calls_total", **labels, outcome="failure")

    answered = call(tenant, "up_echo", {"text": "hello"})
    assert answered["content"][0]["text"] == "echo: hello", answered
    upstream.kill()
    failed = call(tenant, "up_echo", {"text": "again"})
    assert failed["isError"] is True

    assert metric_value("mcp_upstream_calls_total", **labels, outcome="ok") == before_ok + 1
    assert metric_value("mcp_upstream_calls_total", **labels, outcome="failure") == before_failure + 1
    assert metric_value("mcp_upstream_call_duration_seconds_count", **labels) >= 2
