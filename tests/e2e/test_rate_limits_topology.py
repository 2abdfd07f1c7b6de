"""Rate limits in the production topology (PostgreSQL, Redis, two web servers of which one runs two processes on
one socket): a limit holds across every web process, and a refusal is HTTP 429 with ``Retry-After`` and a JSON-RPC
error in both eras (stateless POST, handshake-session POST, 2024-11-05 messages POST)."""

from __future__ import annotations

from typing import Any

import httpx

from mcp_core.errors import RATE_LIMITED
from tests.e2e.live import PRODUCTION_ONLY, LiveServer
from tests.e2e.raw_http import (
    CLIENT_INFO,
    RawSession,
    raw_http_client,
    request_message,
    sse_events,
    stateless_headers,
    stateless_request,
)

pytestmark = PRODUCTION_ONLY

HOUR = 3600
# A new connection per request: the second web server's two processes share its socket, so requests on fresh
# connections land on either.
FRESH_CONNECTION = {"Connection": "close"}


def client_limit(burst: int) -> str:
    """``then`` source for ``atenant_create``: each client may make ``burst`` requests, then one an hour."""
    return (
        "from mcp_platform.quotas.services import rate_limit_create; "
        f"rate_limit_create(tenant=tenant, scope='client', rate=1, period={HOUR}, burst={burst})"
    )


def assert_refused(response: httpx.Response, request_id: Any) -> None:
    assert response.status_code == 429, response.text
    assert HOUR - 10 <= int(response.headers["retry-after"]) <= HOUR
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id
    assert body["error"]["code"] == RATE_LIMITED
    assert body["error"]["data"] == {"limit": "client", "retryAfter": int(response.headers["retry-after"])}


async def test_a_limit_holds_across_web_processes_for_stateless_requests(live_platform: LiveServer) -> None:
    slug = await live_platform.atenant_create("limits", client_limit(burst=4))
    urls = [live_platform.endpoint(slug, web=web) for web in (0, 1)]
    statuses: list[int] = []
    async with raw_http_client() as http:
        for request_id in range(12):
            response = await http.post(
                urls[request_id % 2],
                json=stateless_request(request_id, "tools/list"),
                headers={**stateless_headers("tools/list"), **FRESH_CONNECTION},
            )
            statuses.append(response.status_code)
            if response.status_code != 200:
                assert_refused(response, request_id)
    assert statuses.count(200) == 4, statuses
    assert statuses[:4] == [200] * 4


async def test_a_limit_holds_across_web_processes_in_a_handshake_session(live_platform: LiveServer) -> None:
    slug = await live_platform.atenant_create("limits", client_limit(burst=3))
    async with raw_http_client() as http:
        first = RawSession(http, live_platform.endpoint(slug, web=0))
        await first.initialize()  # one request; its notification does not count
        second = first.joined(live_platform.endpoint(slug, web=1))
        assert "result" in await second.call("tools/list")
        assert "result" in await first.call("ping")
        refused = await second.post(request_message("over", "tools/list"), **FRESH_CONNECTION)
        assert_refused(refused, "over")


async def test_a_limit_holds_across_web_processes_on_the_legacy_messages_endpoint(live_platform: LiveServer) -> None:
    slug = await live_platform.atenant_create("limits", client_limit(burst=2))
    base = live_platform.web_urls
    async with raw_http_client() as http:
        stream_headers = {"Accept": "text/event-stream"}
        async with http.stream("GET", f"{base[0]}/t/{slug}/sse", headers=stream_headers) as stream:
            assert stream.status_code == 200
            events = sse_events(stream)
            endpoint = await anext(events)
            assert endpoint.event == "endpoint", endpoint
            messages_url = f"{base[1]}{endpoint.data}"
            initialize = request_message(
                1, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": CLIENT_INFO}
            )
            assert (await http.post(messages_url, json=initialize)).status_code == 202
            answer = await anext(events)
            assert answer.message() is not None and answer.message()["id"] == 1  # type: ignore[index]
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(messages_url, json=initialized)).status_code == 202
            assert (await http.post(messages_url, json=request_message(2, "ping"))).status_code == 202
            refused = await http.post(
                f"{base[0]}{endpoint.data}", json=request_message(3, "ping"), headers=FRESH_CONNECTION
            )
            assert_refused(refused, 3)


async def test_a_tenant_without_limits_is_served_on_every_request(live_platform: LiveServer) -> None:
    slug = await live_platform.atenant_create("limits")
    async with raw_http_client() as http:
        for request_id in range(6):
            response = await http.post(
                live_platform.endpoint(slug, web=request_id % 2),
                json=stateless_request(request_id, "tools/list"),
                headers=stateless_headers("tools/list"),
            )
            assert response.status_code == 200, response.text
