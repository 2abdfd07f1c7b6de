"""Calls through the whole ASGI stack land in the activity log once the process's writer flushes."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command

from mcp_core.errors import RATE_LIMITED
from mcp_platform.activity.hook import activity_writer
from mcp_platform.activity.models import ActivityRecord
from mcp_platform.quotas.services import rate_limit_create
from tenants.models import Tenant
from tests.gateway.conftest import INIT_PARAMS, request, rpc

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

MCP = "/t/conformance/mcp"
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "stateless-client", "version": "2.5"},
}


@pytest.fixture
def conformance(transactional_db: None) -> None:
    call_command("load_conformance_tenant", verbosity=0)


def stored() -> list[ActivityRecord]:
    activity_writer().flush()
    return list(ActivityRecord.objects.order_by("at", "id"))


async def test_calls_of_both_eras_are_logged_and_listings_are_not(conformance: None) -> None:
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "test_simple_text"}
    params = {"name": "test_simple_text", "arguments": {}, "_meta": META}
    assert (await request("POST", MCP, body=rpc("tools/call", params, id=5), headers=headers)).status == 200
    listing = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    await request("POST", MCP, body=rpc("tools/list", {"_meta": META}, id=6), headers=listing)

    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS))
    session = {"mcp-session-id": reply.headers["mcp-session-id"]}
    await request("POST", MCP, body=rpc("notifications/initialized", id=None), headers=session)
    prompt = {"name": "test_simple_prompt", "arguments": {}}
    assert (await request("POST", MCP, body=rpc("prompts/get", prompt, id="p"), headers=session)).status == 200

    rows = await sync_to_async(stored)()
    assert [(r.method, r.target, r.protocol_version, r.client_name) for r in rows] == [
        ("tools/call", "test_simple_text", "2026-07-28", "stateless-client"),
        ("prompts/get", "test_simple_prompt", "2025-11-25", "gateway-tests"),
    ]
    assert all(r.outcome == "ok" and r.transport == "streamable-http" and r.duration_ms >= 0 for r in rows)
    assert [r.request_id for r in rows] == ["5", "p"]


async def test_a_call_refused_by_a_limit_is_logged_as_rate_limited(conformance: None, memory_buckets: None) -> None:
    tenant = await Tenant.objects.aget(slug="conformance")
    await sync_to_async(rate_limit_create)(tenant=tenant, scope="tenant", rate=1, period=3600, burst=1)
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "test_simple_text"}
    statuses = []
    for request_id in (1, 2):
        params = {"name": "test_simple_text", "arguments": {}, "_meta": META}
        reply = await request("POST", MCP, body=rpc("tools/call", params, id=request_id), headers=headers)
        statuses.append(reply.status)
    assert statuses == [200, 429]
    rows = await sync_to_async(stored)()
    assert [(r.request_id, r.outcome, r.error_code) for r in rows] == [
        ("1", "ok", None),
        ("2", "rate_limited", RATE_LIMITED),
    ]
