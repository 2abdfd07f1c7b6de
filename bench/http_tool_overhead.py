"""What an HTTP tool adds to the request it makes: the HTTP backend (arguments to request, the outbound door's
checks, the result) against the same GET made with a plain ``httpx.AsyncClient``, both to one local REST API.

``python -m bench.http_tool_overhead [CALLS]``: sequential calls on one event loop, after a warm-up, alternating
the two in rounds so drift hits both alike; prints p50/p90/p99 of each and of the difference.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

REPO = Path(__file__).resolve().parents[1]
ROUNDS = 20


async def _pet(request: Request) -> JSONResponse:
    return JSONResponse({"id": request.path_params["pet_id"], "name": "Rex", "tags": ["good", "dog"]})


api = Starlette(routes=[Route("/pets/{pet_id}", _pet)])


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = [ordered[int(len(ordered) * q) - 1] for q in (0.5, 0.9, 0.99)]
    return " / ".join(f"{value * 1e3:.3f}" for value in pick)


async def _timed(call: Callable[[], Awaitable[object]], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    return samples


async def _measure(base: str, calls: int) -> None:
    import httpx

    from mcp_core.context import RequestContext
    from mcp_infra.outbound import outbound_clients_close
    from tenants.backends import http
    from tenants.models import Tool

    tool = Tool(tenant_id=1, name="get_pet", backend="http", config={"url": base + "/pets/{pet_id}"})
    ctx = RequestContext(outbound=None, client_capabilities={}, arguments={}, progress_token=None, log_level=None)  # type: ignore[arg-type]
    direct = httpx.AsyncClient()

    async def plain() -> object:
        return (await direct.get(base + "/pets/7")).json()

    async def tool_call() -> object:
        return await http.tool_invoke(tool, {"pet_id": 7}, ctx)

    await _timed(plain, 200)
    await _timed(tool_call, 200)
    per_round = max(1, calls // ROUNDS)
    plain_samples: list[float] = []
    tool_samples: list[float] = []
    for _ in range(ROUNDS):
        plain_samples += await _timed(plain, per_round)
        tool_samples += await _timed(tool_call, per_round)
    await direct.aclose()
    await outbound_clients_close()
    overhead = statistics.median(tool_samples) - statistics.median(plain_samples)
    print(f"calls per kind: {len(plain_samples)} (sequential, keep-alive, loopback)")
    print(f"direct httpx   p50/p90/p99 ms: {_percentiles(plain_samples)}")
    print(f"HTTP tool      p50/p90/p99 ms: {_percentiles(tool_samples)}")
    print(f"p50 overhead of the HTTP tool: {overhead * 1e3:.3f} ms")


def main(argv: list[str]) -> int:
    calls = int(argv[1]) if len(argv) > 1 else 4000
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcp_platform.settings")
    os.environ["MCP_OUTBOUND_ALLOWED_NETWORKS"] = "127.0.0.1/32"
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv_server = [sys.executable, "-m", "uvicorn", "bench.http_tool_overhead:api", "--port", str(port)]
    server = subprocess.Popen([*argv_server, "--log-level", "warning"], cwd=REPO)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        import django

        django.setup()
        asyncio.run(_measure(f"http://127.0.0.1:{port}", calls))
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
