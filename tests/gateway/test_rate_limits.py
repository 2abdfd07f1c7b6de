"""Rate limits on the endpoint, through the whole ASGI stack (embedded topology: buckets in process memory): a
refusal is HTTP 429 with ``Retry-After`` and a JSON-RPC error carrying the request's id, in the stateless era, in a
handshake session, and on the 2024-11-05 messages endpoint, before any work starts."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from mcp_core.errors import RATE_LIMITED
from mcp_core.session import SessionState
from mcp_platform.gateway import sessions
from mcp_platform.quotas import services
from tests.gateway.conftest import INIT_PARAMS, META, Reply, V, request, rpc

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("memory_buckets")]

MCP = "/t/acme/mcp"


@pytest.fixture
async def limited(tenant: Any) -> Any:
    """The tenant ``acme`` allowing each client two requests an hour."""
    await sync_to_async(services.rate_limit_create)(tenant=tenant, scope="client", rate=1, period=3600, burst=2)
    return tenant


async def stateless(method: str, id: int) -> Reply:
    headers = {"mcp-protocol-version": V, "mcp-method": method}
    return await request("POST", MCP, body=rpc(method, {"_meta": META}, id=id), headers=headers)


def assert_refused(reply: Reply, request_id: Any) -> None:
    assert reply.status == 429, reply.body
    assert 3590 <= int(reply.headers["retry-after"]) <= 3600
    body = reply.json()
    assert body["id"] == request_id
    assert body["error"]["code"] == RATE_LIMITED
    assert body["error"]["data"]["limit"] == "client"


async def test_a_stateless_request_over_the_limit_is_refused_with_429(limited: Any) -> None:
    assert [(await stateless("server/discover", id)).status for id in (1, 2)] == [200, 200]
    assert_refused(await stateless("server/discover", 3), 3)


async def test_a_tenant_without_limits_is_not_limited(tenant: Any) -> None:
    assert {(await stateless("server/discover", id)).status for id in range(10)} == {200}


async def test_a_handshake_session_request_over_the_limit_is_refused_with_429(limited: Any) -> None:
    init = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS, id=1))
    assert init.status == 200
    session = {"mcp-session-id": init.headers["mcp-session-id"]}
    # Notifications are not requests: they do not count.
    for _ in range(3):
        await request("POST", MCP, body=rpc("notifications/initialized", id=None), headers=session)
    assert (await request("POST", MCP, body=rpc("tools/list", id=2), headers=session)).status == 200
    assert_refused(await request("POST", MCP, body=rpc("tools/list", id="three"), headers=session), "three")


async def test_a_legacy_messages_post_over_the_limit_is_refused_with_429_before_its_202(limited: Any) -> None:
    session = await sessions.legacy_session_create(
        tenant_id=limited.pk, principal="anonymous", transport="sse", state=SessionState.READY
    )
    path = f"/t/acme/messages?session_id={session.pk}"
    assert [(await request("POST", path, body=rpc("ping", id=id))).status for id in (1, 2)] == [202, 202]
    assert_refused(await request("POST", path, body=rpc("ping", id=3)), 3)


async def test_a_listen_stream_over_the_limit_is_refused_with_429(limited: Any) -> None:
    assert [(await stateless("server/discover", id)).status for id in (1, 2)] == [200, 200]
    params = {"notifications": {"toolsListChanged": True}, "_meta": META}
    headers = {"mcp-protocol-version": V, "mcp-method": "subscriptions/listen"}
    assert_refused(await request("POST", MCP, body=rpc("subscriptions/listen", params, id=9), headers=headers), 9)
