"""The gateway reports each call to the observation hooks, in both eras, with what it knows of tenant and client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from mcp_platform.gateway.observing import principal_parts
from mcp_platform.observe.calls import CallInfo, CallRecord, register_hook, unregister_hook
from tenants.models import Tenant
from tenants.services import tenant_update
from tests.gateway.conftest import INIT_PARAMS, request, rpc

MCP = "/t/conformance/mcp"
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "stateless-client", "version": "2.5"},
}


class Recorder:
    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    def started(self, info: CallInfo) -> object:
        return None

    def finished(self, record: CallRecord, token: object) -> None:
        self.records.append(record)

    def of(self, method: str) -> list[CallRecord]:
        return [record for record in self.records if record.info.method == method]


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    hook = Recorder()
    register_hook(hook)
    yield hook
    unregister_hook(hook)


def test_principal_labels_split_into_user_and_client() -> None:
    assert principal_parts("user:7 client:abc") == ("7", "abc")
    assert principal_parts("client:abc") == ("", "abc")
    assert principal_parts("anonymous") == ("", "")


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_stateless_tool_call_is_reported_with_its_client_and_target(conformance: None, recorder: Recorder):
    params = {"name": "test_error_handling", "arguments": {"x": 1}, "_meta": META}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "test_error_handling"}
    reply = await request("POST", MCP, body=rpc("tools/call", params, id=41), headers=headers)
    assert reply.status == 200
    [record] = recorder.of("tools/call")
    info = record.info
    assert (info.tenant_slug, info.target, info.request_id, info.transport) == (
        "conformance",
        "test_error_handling",
        "41",
        "streamable-http",
    )
    assert (info.client_name, info.client_version, info.protocol_version) == ("stateless-client", "2.5", "2026-07-28")
    assert info.arguments is None  # the tenant does not keep arguments: the call's info holds none
    assert record.outcome == "tool_error"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_arguments_are_reported_where_the_tenant_keeps_them(conformance: None, recorder: Recorder):
    tenant = await Tenant.objects.aget(slug="conformance")
    await sync_to_async(tenant_update)(tenant=tenant, data={"activity_record_arguments": True})
    params = {"name": "test_error_handling", "arguments": {"x": 1}, "_meta": META}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "test_error_handling"}
    reply = await request("POST", MCP, body=rpc("tools/call", params, id=42), headers=headers)
    assert reply.status == 200
    [record] = recorder.of("tools/call")
    assert record.info.arguments == {"x": 1}


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_session_call_is_reported_with_the_session_client(conformance: None, recorder: Recorder) -> None:
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS))
    session = {"mcp-session-id": reply.headers["mcp-session-id"]}
    await request("POST", MCP, body=rpc("notifications/initialized", id=None), headers=session)
    reply = await request("POST", MCP, body=rpc("resources/read", {"uri": "test://nowhere"}, id="r-1"), headers=session)
    assert reply.status == 200
    [record] = recorder.of("resources/read")
    assert (record.info.target, record.info.request_id) == ("test://nowhere", "r-1")
    assert (record.info.client_name, record.info.protocol_version) == ("gateway-tests", "2025-11-25")
    assert record.outcome == "error" and record.error_code is not None
