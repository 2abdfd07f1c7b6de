"""The Streamable HTTP endpoint through the whole ASGI stack: status codes, sessions and error mapping."""

from __future__ import annotations

import pytest

from tests.gateway.conftest import INIT_PARAMS, request, rpc

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

MCP = "/t/acme/mcp"


async def initialize(version: str = "2025-11-25") -> str:
    reply = await request("POST", MCP, body=rpc("initialize", {**INIT_PARAMS, "protocolVersion": version}))
    assert reply.status == 200
    session_id = reply.headers["mcp-session-id"]
    await request("POST", MCP, body=rpc("notifications/initialized", id=None), headers={"mcp-session-id": session_id})
    return session_id


async def test_initialize_negotiates_the_requested_version_and_issues_a_session(tenant):
    reply = await request("POST", MCP, body=rpc("initialize", {**INIT_PARAMS, "protocolVersion": "2025-06-18"}))
    assert reply.status == 200
    result = reply.json()["result"]
    assert result["protocolVersion"] == "2025-06-18"
    assert set(result["capabilities"]) >= {"tools", "resources", "prompts", "logging", "completions"}
    assert result["serverInfo"]["name"].endswith("/acme")
    session_id = reply.headers["mcp-session-id"]
    assert 16 <= len(session_id) <= 128 and all(0x21 <= ord(c) <= 0x7E for c in session_id)


async def test_initialize_with_an_unknown_version_answers_the_newest(tenant):
    reply = await request("POST", MCP, body=rpc("initialize", {**INIT_PARAMS, "protocolVersion": "1999-01-01"}))
    assert reply.json()["result"]["protocolVersion"] == "2025-11-25"


async def test_unknown_tenant_is_404(tenant):
    reply = await request("POST", "/t/nobody/mcp", body=rpc("initialize", INIT_PARAMS))
    assert reply.status == 404


async def test_suspended_tenant_is_404(tenant):
    from tenants.services import tenant_update

    await _sync(tenant_update, tenant=tenant, data={"status": "suspended"})
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS))
    assert reply.status == 404


async def test_foreign_host_is_403(tenant):
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers={"host": "evil.example.com"})
    assert reply.status == 403


async def test_foreign_origin_is_403_and_same_host_origin_is_allowed(tenant):
    evil = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers={"origin": "http://evil.example"})
    assert evil.status == 403
    local = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers={"origin": "http://127.0.0.1:8000"})
    assert local.status == 200


async def test_origin_listed_by_the_tenant_is_allowed(tenant):
    from tenants.services import tenant_update

    await _sync(tenant_update, tenant=tenant, data={"allowed_origins": ["https://app.example.com"]})
    reply = await request(
        "POST", MCP, body=rpc("initialize", INIT_PARAMS), headers={"origin": "https://app.example.com"}
    )
    assert reply.status == 200


async def test_oversized_body_is_413(tenant, settings):
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "MAX_REQUEST_BYTES": 2048}
    big = rpc("initialize", {**INIT_PARAMS, "clientInfo": {"name": "x" * 4096, "version": "1"}})
    reply = await request("POST", MCP, body=big)
    assert reply.status == 413


async def test_a_body_sent_in_pieces_is_served_whole(tenant):
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), chunk=16)
    assert reply.status == 200
    assert reply.json()["result"]["protocolVersion"] == "2025-11-25"


async def test_malformed_json_is_a_parse_error_with_400(tenant):
    reply = await request("POST", MCP, raw=b"{not json")
    assert reply.status == 400
    assert reply.json()["error"]["code"] == -32700


async def test_wrong_content_type_is_415(tenant):
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers={"content-type": "text/plain"})
    assert reply.status == 415


async def test_accept_without_event_stream_is_406(tenant):
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers={"accept": "application/json"})
    assert reply.status == 406


async def test_request_without_session_is_400(tenant):
    reply = await request("POST", MCP, body=rpc("tools/list"))
    assert reply.status == 400


async def test_unknown_session_is_404(tenant):
    reply = await request("POST", MCP, body=rpc("tools/list"), headers={"mcp-session-id": "no-such-session"})
    assert reply.status == 404


async def test_unsupported_protocol_version_header_is_400(tenant):
    session_id = await initialize()
    reply = await request(
        "POST",
        MCP,
        body=rpc("tools/list"),
        headers={"mcp-session-id": session_id, "mcp-protocol-version": "2099-01-01"},
    )
    assert reply.status == 400


async def test_session_negotiated_later_accepts_the_2025_03_26_header(tenant):
    session_id = await initialize()
    reply = await request(
        "POST",
        MCP,
        body=rpc("tools/list"),
        headers={"mcp-session-id": session_id, "mcp-protocol-version": "2025-03-26"},
    )
    assert reply.status == 200
    assert reply.json()["result"] == {"tools": []}


async def test_notifications_are_accepted_with_202_and_no_body(tenant):
    session_id = await initialize()
    reply = await request(
        "POST", MCP, body=rpc("notifications/initialized", id=None), headers={"mcp-session-id": session_id}
    )
    assert reply.status == 202
    assert reply.body == b""


async def test_ping_answers_an_empty_object(tenant):
    session_id = await initialize()
    reply = await request("POST", MCP, body=rpc("ping", id="p1"), headers={"mcp-session-id": session_id})
    assert reply.json() == {"jsonrpc": "2.0", "id": "p1", "result": {}}


async def test_unknown_method_is_method_not_found(tenant):
    session_id = await initialize()
    reply = await request("POST", MCP, body=rpc("nope/nothing"), headers={"mcp-session-id": session_id})
    assert reply.status == 200
    assert reply.json()["error"]["code"] == -32601


async def test_batches_are_refused_outside_2025_03_26(tenant):
    session_id = await initialize("2025-06-18")
    reply = await request("POST", MCP, body=[rpc("ping", id=1)], headers={"mcp-session-id": session_id})
    assert reply.status == 400
    assert reply.json()["error"]["code"] == -32600


async def test_a_2025_03_26_batch_is_answered_as_an_array(tenant):
    session_id = await initialize("2025-03-26")
    reply = await request(
        "POST",
        MCP,
        body=[rpc("ping", id=1), rpc("tools/list", id=2), {"jsonrpc": "2.0", "id": 3}],
        headers={"mcp-session-id": session_id},
    )
    assert reply.status == 200
    by_id = {m["id"]: m for m in reply.json()}
    assert by_id[1]["result"] == {}
    assert by_id[2]["result"] == {"tools": []}
    assert by_id[3]["error"]["code"] == -32600


async def test_delete_ends_the_session(tenant):
    session_id = await initialize()
    reply = await request("DELETE", MCP, headers={"mcp-session-id": session_id})
    assert reply.status == 200
    after = await request("POST", MCP, body=rpc("ping"), headers={"mcp-session-id": session_id})
    assert after.status == 404


async def test_session_of_one_tenant_is_unknown_at_another(tenant):
    from tenants.services import tenant_create

    await _sync(tenant_create, slug="other", name="Other")
    session_id = await initialize()
    reply = await request("POST", "/t/other/mcp", body=rpc("ping"), headers={"mcp-session-id": session_id})
    assert reply.status == 404


async def test_get_and_delete_without_session_are_405_as_is_put(tenant):
    get = await request("GET", MCP, headers={"accept": "text/event-stream"})
    assert (get.status, get.headers["allow"]) == (405, "POST")
    delete = await request("DELETE", MCP)
    assert delete.status == 405
    put = await request("PUT", MCP)
    assert put.status == 405


async def _sync(fn, **kwargs):
    from asgiref.sync import sync_to_async

    return await sync_to_async(fn)(**kwargs)
