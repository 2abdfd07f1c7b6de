"""Calls refused by a rate limit are in the tenant's activity log as ``rate_limited``, in both protocol eras and on
the 2024-11-05 HTTP+SSE transport, whichever path refused them."""

from __future__ import annotations

import json
import time

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from mcp_core.errors import RATE_LIMITED
from tests.e2e.live import LiveServer, in_tenant
from tests.e2e.raw_http import CLIENT_INFO, raw_http_client, request_message, sse_events

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

TEST_DEADLINE = 60.0
REQUEST_TIMEOUT = 30.0
LOGGED_WITHIN = 20.0
MINUTE = 60

# Each tool may be called twice a minute (all callers together): the third call is refused.
TOOLS_AND_LIMIT = """
for name in ("modern_tool", "session_tool", "sse_tool"):
    services.tool_create(tenant=tenant, name=name, description=name,
                         config={"content": [{"type": "text", "text": name}]})
from mcp_platform.quotas.services import rate_limit_create
rate_limit_create(tenant=tenant, scope="tool", rate=2, period=60, burst=2)
"""

ROWS = """
import json
from mcp_platform.activity.models import ActivityRecord
rows = ActivityRecord.objects.filter(tenant__slug={slug!r}).order_by("at")
print(json.dumps(list(rows.values("target", "protocol_version", "transport", "outcome", "error_code", "client_name"))))
"""


async def logged(live_platform: LiveServer, slug: str, count: int) -> list[dict[str, object]]:
    """The tenant's rows, once ``count`` of them are there (bounded wait)."""
    deadline = time.monotonic() + LOGGED_WITHIN
    while True:
        output = await live_platform.amanage("shell", "-c", ROWS.format(slug=slug))
        rows = json.loads(output.strip().splitlines()[-1])
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        await anyio.sleep(0.5)


async def call_three_times(client: Client, tool: str) -> list[int | None]:
    """For each of three calls of ``tool``: None when it was served, else the JSON-RPC error code it got."""
    codes: list[int | None] = []
    for _ in range(3):
        try:
            await client.call_tool(tool, {})
            codes.append(None)
        except MCPError as exc:
            codes.append(exc.error.code)
    return codes


async def call_three_times_on_the_sse_transport(live_platform: LiveServer, slug: str) -> list[int]:
    """The status of each of three ``tools/call`` POSTs of one 2024-11-05 HTTP+SSE session (the SDK's SSE client
    gives up its session on a 429, so the wire is driven directly)."""
    async with (
        raw_http_client() as http,
        http.stream("GET", live_platform.sse_endpoint(slug), headers={"Accept": "text/event-stream"}) as stream,
    ):
        events = sse_events(stream)
        endpoint = await anext(events)
        messages_url = f"{live_platform.web_urls[0]}{endpoint.data}"
        initialize = request_message(
            0, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": CLIENT_INFO}
        )
        assert (await http.post(messages_url, json=initialize)).status_code == 202
        await anext(events)
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(messages_url, json=initialized)).status_code == 202
        statuses = []
        for request_id in (1, 2, 3):
            call = request_message(request_id, "tools/call", {"name": "sse_tool", "arguments": {}})
            statuses.append((await http.post(messages_url, json=call)).status_code)
        return statuses


async def test_refusals_by_a_tool_limit_are_logged_in_both_eras_and_on_the_sse_transport(
    live_platform: LiveServer,
) -> None:
    slug = await live_platform.atenant_create("refusals")
    await live_platform.amanage("shell", "-c", in_tenant(slug, TOOLS_AND_LIMIT))
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(
            live_platform.endpoint(slug),
            cache=None,
            read_timeout_seconds=REQUEST_TIMEOUT,
            client_info=types.Implementation(name="modern", version="1"),
        ) as modern:
            assert await call_three_times(modern, "modern_tool") == [None, None, RATE_LIMITED]
        async with Client(
            live_platform.endpoint(slug),
            mode="legacy",
            cache=None,
            read_timeout_seconds=REQUEST_TIMEOUT,
            client_info=types.Implementation(name="session", version="1"),
        ) as session:
            assert await call_three_times(session, "session_tool") == [None, None, RATE_LIMITED]
        assert await call_three_times_on_the_sse_transport(live_platform, slug) == [202, 202, 429]

    rows = await logged(live_platform, slug, 9)
    outcomes = sorted((r["target"], r["transport"], r["outcome"], r["error_code"]) for r in rows)
    assert outcomes == [
        ("modern_tool", "streamable-http", "ok", None),
        ("modern_tool", "streamable-http", "ok", None),
        ("modern_tool", "streamable-http", "rate_limited", RATE_LIMITED),
        ("session_tool", "streamable-http", "ok", None),
        ("session_tool", "streamable-http", "ok", None),
        ("session_tool", "streamable-http", "rate_limited", RATE_LIMITED),
        ("sse_tool", "http+sse", "ok", None),
        ("sse_tool", "http+sse", "ok", None),
        ("sse_tool", "http+sse", "rate_limited", RATE_LIMITED),
    ], rows
    refused = {r["target"]: r for r in rows if r["outcome"] == "rate_limited"}
    assert refused["session_tool"]["protocol_version"] == "2025-11-25"
    assert refused["session_tool"]["client_name"] == "session"
    assert refused["sse_tool"]["protocol_version"] == "2024-11-05"
    assert refused["sse_tool"]["client_name"] == CLIENT_INFO["name"]
