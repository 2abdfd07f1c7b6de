"""Database statements per request, counted on the wire between one web process and PostgreSQL.

A dedicated web process connects through ``pgcount.StatementCounter``; each case is warmed up, then sent
``REQUESTS`` times one after another, and the counter is read around every request. Trailing statements (run
after the response) land on the next request, so the mean over all requests is the figure; min and max show
whether the count is constant.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bench.mcp_wire import HANDSHAKE, STATELESS, McpSession, Target
from bench.pgcount import StatementCounter

JSONObject = dict[str, Any]
REQUESTS = 50
WARMUP = 5
TRAILING_WAIT = 0.3


@dataclass(frozen=True)
class Case:
    label: str
    era: str
    path: str
    method: str  # "session" for initialize + notifications/initialized
    params: JSONObject | None = None
    second_page: bool = False


CASES = [
    Case("tools/list, 10,000 tools, first page", STATELESS, "/t/bench-catalog/mcp", "tools/list"),
    Case("tools/list, 10,000 tools, first page", HANDSHAKE, "/t/bench-catalog/mcp", "tools/list"),
    Case("tools/list, 10,000 tools, second page", STATELESS, "/t/bench-catalog/mcp", "tools/list", second_page=True),
    Case("tools/list, 3 tools", STATELESS, "/t/bench/mcp", "tools/list"),
    Case("tools/call static_info", STATELESS, "/t/bench/mcp", "tools/call", {"name": "static_info", "arguments": {}}),
    Case("tools/call static_info", HANDSHAKE, "/t/bench/mcp", "tools/call", {"name": "static_info", "arguments": {}}),
    Case("tools/call echo", STATELESS, "/t/bench/mcp", "tools/call", {"name": "echo", "arguments": {"message": "hi"}}),
    Case("tools/call echo", HANDSHAKE, "/t/bench/mcp", "tools/call", {"name": "echo", "arguments": {"message": "hi"}}),
    Case("server/discover", STATELESS, "/t/bench/mcp", "server/discover"),
    Case("initialize + initialized + DELETE", HANDSHAKE, "/t/bench/mcp", "session"),
]


async def _one_case(counter: StatementCounter, port: int, case: Case) -> JSONObject:
    target = Target("127.0.0.1", port, case.path)
    session = await McpSession.open(target, case.era, handshake=case.method != "session")
    try:
        params = dict(case.params or {})
        if case.second_page:
            first = await session.call(case.method, params)
            params["cursor"] = first["nextCursor"]
        send: Callable[[], Awaitable[Any]]
        if case.method == "session":

            async def send() -> None:
                await session.initialize()
                await session.end()

        else:

            async def send() -> JSONObject:
                return await session.call(case.method, params)

        for _ in range(WARMUP):
            await send()
        await asyncio.sleep(TRAILING_WAIT)
        start = counter.snapshot()
        per_request = []
        for _ in range(REQUESTS):
            before = counter.snapshot().statements
            await send()
            per_request.append(counter.snapshot().statements - before)
        await asyncio.sleep(TRAILING_WAIT)
        end = counter.snapshot()
    finally:
        session.close()
    return {
        "case": case.label,
        "era": case.era,
        "requests": REQUESTS,
        "statements_per_request": (end.statements - start.statements) / REQUESTS,
        "min": min(per_request),
        "max": max(per_request),
        "new_connections": end.connections - start.connections,
    }


def count_statements(counter: StatementCounter, port: int) -> list[JSONObject]:
    """Statements per request for every case, against the web process listening on ``port``."""

    async def run_all() -> list[JSONObject]:
        return [await _one_case(counter, port, case) for case in CASES]

    return asyncio.run(run_all())
