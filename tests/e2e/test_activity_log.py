"""Calls of both eras and of the HTTP+SSE transport, made through two web processes, show up in the tenant's
activity log with the right fields (each process writes its own records, batched)."""

from __future__ import annotations

import json
import secrets
import time

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client

from tests.e2e.live import PRODUCTION_ONLY, LiveServer

pytestmark = [
    *PRODUCTION_ONLY,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

TEST_DEADLINE = 60.0
REQUEST_TIMEOUT = 30.0
# Records are written within about a second of the call; a generous bound for a busy machine.
LOGGED_WITHIN = 20.0

ROWS = """
import json
from mcp_platform.activity.models import ActivityRecord
rows = ActivityRecord.objects.filter(tenant__slug="conformance", client_name__startswith={prefix!r}).order_by("at")
print(json.dumps(list(rows.values("client_name", "client_version", "method", "target", "protocol_version",
      "transport", "request_id", "outcome", "error_code", "duration_ms"))))
"""


async def logged(live_platform: LiveServer, prefix: str, count: int) -> list[dict[str, object]]:
    """The rows of clients named ``prefix…``, once ``count`` of them are there (bounded wait)."""
    deadline = time.monotonic() + LOGGED_WITHIN
    while True:
        output = await live_platform.amanage("shell", "-c", ROWS.format(prefix=prefix))
        rows = json.loads(output.strip().splitlines()[-1])
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        await anyio.sleep(0.5)


async def test_calls_of_every_era_and_transport_reach_the_log_from_both_processes(live_platform: LiveServer) -> None:
    prefix = f"activity-{secrets.token_hex(3)}"

    def named(era: str) -> types.Implementation:
        return types.Implementation(name=f"{prefix}-{era}", version="9.1")

    with anyio.fail_after(TEST_DEADLINE):
        async with Client(
            live_platform.endpoint(web=0), cache=None, read_timeout_seconds=REQUEST_TIMEOUT, client_info=named("modern")
        ) as modern:
            await modern.call_tool("test_simple_text", {})
            await modern.call_tool("test_error_handling", {})
        async with Client(
            live_platform.endpoint(web=1),
            mode="legacy",
            cache=None,
            read_timeout_seconds=REQUEST_TIMEOUT,
            client_info=named("session"),
        ) as session:
            await session.get_prompt("test_simple_prompt", {})
        transport = sse_client(live_platform.sse_endpoint(web=1), timeout=10.0, sse_read_timeout=REQUEST_TIMEOUT)
        async with Client(
            transport, mode="legacy", cache=None, read_timeout_seconds=REQUEST_TIMEOUT, client_info=named("sse")
        ) as legacy:
            await legacy.read_resource("test://static-text")

    rows = await logged(live_platform, prefix, 4)
    seen = {(r["client_name"], r["method"], r["target"]): r for r in rows}
    assert set(seen) == {
        (f"{prefix}-modern", "tools/call", "test_simple_text"),
        (f"{prefix}-modern", "tools/call", "test_error_handling"),
        (f"{prefix}-session", "prompts/get", "test_simple_prompt"),
        (f"{prefix}-sse", "resources/read", "test://static-text"),
    }, rows
    modern_ok = seen[(f"{prefix}-modern", "tools/call", "test_simple_text")]
    assert (modern_ok["protocol_version"], modern_ok["transport"], modern_ok["outcome"]) == (
        "2026-07-28",
        "streamable-http",
        "ok",
    )
    assert seen[(f"{prefix}-modern", "tools/call", "test_error_handling")]["outcome"] == "tool_error"
    prompt = seen[(f"{prefix}-session", "prompts/get", "test_simple_prompt")]
    assert (prompt["protocol_version"], prompt["transport"]) == ("2025-11-25", "streamable-http")
    read = seen[(f"{prefix}-sse", "resources/read", "test://static-text")]
    assert (read["protocol_version"], read["transport"], read["outcome"]) == ("2025-11-25", "http+sse", "ok")
    assert all(r["client_version"] == "9.1" and r["request_id"] != "" and r["duration_ms"] >= 0 for r in rows)
