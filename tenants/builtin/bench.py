"""Python functions behind the ``bench`` tenant that the benchmark harness (``bench/``) drives."""

from __future__ import annotations

import asyncio
import time

from mcp_core.context import ToolContext
from tenants.backends.registry import default_registry, python_tool
from tenants.builtin.bench_fixtures import BENCH

default_registry.reserve_package("bench", tenants=(BENCH.slug,))


@python_tool("bench.progress")
async def progress(ctx: ToolContext, steps: int = 100, interval_ms: int = 0) -> str:
    # The message carries the wall-clock emit time (ns): a client on the same machine subtracts it from the
    # time it read the notification, which measures everything between the tool and the client.
    for step in range(1, steps + 1):
        if interval_ms and step > 1:
            await asyncio.sleep(interval_ms / 1000)
        await ctx.report_progress(step, steps, str(time.time_ns()))
    return f"Reported {steps} steps."
