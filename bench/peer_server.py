"""The peer: the official ``mcp`` SDK's ``MCPServer`` with the bench tenants' tools, as an ASGI app for uvicorn.

``BENCH_PEER_CATALOG_TOOLS=N`` serves N catalog tools instead (the ``tools/list`` workload). Stateful sessions for
handshake-era clients; 2026-07-28 requests are served on the same endpoint by the SDK itself.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools.base import Tool

# The same texts and names as tenants/builtin/bench_fixtures.py; the harness checks both servers agree before it
# measures. Not imported from there: the peer must not load Django.
STATIC_TEXT = "A fixed answer stored in the catalog."


def catalog_tool_name(index: int) -> str:
    return f"catalog_tool_{index:05d}"


def static_info() -> str:
    """Returns a fixed text."""
    return STATIC_TEXT


def echo(message: str) -> str:
    """Returns the message it was given."""
    return message


async def progress(ctx: Context, steps: int = 100, interval_ms: int = 0) -> str:
    """Reports progress steps whose messages are the emit time in nanoseconds."""
    for step in range(1, steps + 1):
        if interval_ms and step > 1:
            await asyncio.sleep(interval_ms / 1000)
        await ctx.report_progress(step, steps, str(time.time_ns()))
    return f"Reported {steps} steps."


def catalog_query(query: str) -> str:
    """Catalog tool."""
    return query


def catalog_tools(count: int) -> list[Tool]:
    # One tool built from the function, copied under each name: building 10,000 argument models takes minutes.
    template = Tool.from_function(catalog_query, structured_output=False)
    return [
        template.model_copy(update={"name": catalog_tool_name(i), "description": f"Catalog tool number {i}."})
        for i in range(count)
    ]


def build() -> MCPServer:
    catalog_size = int(os.environ.get("BENCH_PEER_CATALOG_TOOLS", "0"))
    if catalog_size:
        return MCPServer("bench-catalog", tools=catalog_tools(catalog_size), log_level="WARNING")
    server = MCPServer("bench", instructions="Tools the benchmark harness calls.", log_level="WARNING")
    for function in (static_info, echo, progress):
        server.add_tool(function, structured_output=False)
    return server


# JSON responses like ours; BENCH_PEER_JSON=0 for SSE, which the progress workload needs (the SDK drops
# notifications from a JSON response).
app = build().streamable_http_app(
    streamable_http_path="/mcp", json_response=os.environ.get("BENCH_PEER_JSON", "1") != "0"
)

# The same start-up step as our ``manage.py serve``: keep the collector from walking the import-time heap.
gc.collect()
gc.freeze()
