"""Calls to a tenant's named server are observed under its name: activity rows and request metrics carry it ("" for
the default server), and a rate limit of the server counts its requests alone."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from mcp_platform.activity.hook import activity_writer
from mcp_platform.activity.models import ActivityRecord
from mcp_platform.quotas.services import rate_limit_create
from tenants import services
from tenants.models import Server, Tenant
from tests.gateway.conftest import INIT_PARAMS, request, rpc
from tests.gateway.test_servers import DEFAULT, READER, curated_catalog
from tests.gateway.test_stateless import call
from tests.telemetry.conftest import metric_value

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def acme(transactional_db: None) -> Tenant:
    tenant = services.tenant_create(slug="acme", name="Acme")
    curated_catalog(tenant)
    return tenant


def stored() -> list[tuple[str, str, str, str]]:
    activity_writer().flush()
    return [
        (row.server, row.target, row.protocol_version, row.outcome)
        for row in ActivityRecord.objects.filter(kind="call").order_by("at", "id")
    ]


async def test_activity_rows_of_both_eras_and_the_legacy_transport_name_the_server(acme: Tenant) -> None:
    await call("tools/call", {"name": "search", "arguments": {}}, path=READER, id=1)
    await call("tools/call", {"name": "search", "arguments": {}}, path=DEFAULT, id=2)
    init = await request("POST", READER, body=rpc("initialize", INIT_PARAMS))
    session = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    await request("POST", READER, body=rpc("notifications/initialized", id=None), headers=session)
    called = rpc("tools/call", {"name": "lookup", "arguments": {}}, id=3)
    assert (await request("POST", READER, body=called, headers=session)).status == 200
    assert await sync_to_async(stored)() == [
        ("reader", "search", "2026-07-28", "ok"),
        ("", "search", "2026-07-28", "ok"),
        ("reader", "lookup", "2025-11-25", "ok"),
    ]


async def test_request_metrics_are_labelled_by_server(acme: Tenant) -> None:
    reader = {"tenant": "acme", "server": "reader", "tool": "search", "outcome": "ok"}
    default = {**reader, "server": ""}
    before = (metric_value("mcp_tool_calls_total", **reader), metric_value("mcp_tool_calls_total", **default))
    for number in range(2):
        await call("tools/call", {"name": "search", "arguments": {}}, path=READER, id=number)
    await call("tools/call", {"name": "search", "arguments": {}}, path=DEFAULT, id=9)
    after = (metric_value("mcp_tool_calls_total", **reader), metric_value("mcp_tool_calls_total", **default))
    assert (after[0] - before[0], after[1] - before[1]) == (2, 1)
    listed = {"tenant": "acme", "server": "reader", "method": "tools/call"}
    assert metric_value("mcp_request_duration_seconds_count", **listed) >= 2


async def test_a_server_limit_counts_the_requests_to_that_server_only(acme: Tenant, memory_buckets: None) -> None:
    reader = await Server.objects.aget(tenant=acme, slug="reader")
    limit: Any = await sync_to_async(rate_limit_create)(
        tenant=acme, scope="server", server=reader, rate=1, period=3600, burst=2
    )
    assert str(limit) == "Server (all requests to one server): reader, 1 per hour"
    statuses = [(await call("tools/list", path=READER, id=n)).status for n in range(3)]
    others = [(await call("tools/list", path=DEFAULT, id=n)).status for n in range(3)]
    assert (statuses, others) == ([200, 200, 429], [200, 200, 200])
    refused = await call("tools/call", {"name": "search", "arguments": {}}, path=READER, id=7)
    assert refused.status == 429 and "server" in refused.json()["error"]["message"]
    assert (await sync_to_async(stored)())[-1] == ("reader", "search", "2026-07-28", "rate_limited")
