"""What observing a request costs in CPU: the metrics hook, the JSON request log line and the open-streams middleware,
each timed in process on the call it makes per request (a short local measurement, not a load test).

``python -m bench.metrics_overhead [ITERATIONS]``: prints microseconds per request for an ``observed_call`` with no
hook, with a hook that does nothing (the seam's own cost), with the metrics hook, with the metrics and JSON-log
hooks, for the metrics hook's ``finished`` alone (one label set, and 64 label sets in turn with durations spread over
the buckets, as a busy process sees them), for one fold of the metrics tally (64 label sets; a thread does it once a
second), and for the middleware's pass over a JSON response.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

ITERATIONS = 200_000
ROUNDS = 5


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcp_platform.settings")
    os.environ.setdefault("MCP_VAR_DIR", tempfile.mkdtemp(prefix="metrics-overhead-"))
    import django

    django.setup()


def _best_of(rounds: int, iterations: int, body: Callable[[], None]) -> float:
    """Microseconds per iteration, best round (the least disturbed by the other work on the machine)."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter_ns()
        for _ in range(iterations):
            body()
        best = min(best, (time.perf_counter_ns() - started) / iterations / 1000)
    return best


def _best_per_item(rounds: int, items: list[Any], body: Callable[[Any], None]) -> float:
    """Microseconds per item of ``items``, best round."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter_ns()
        for item in items:
            body(item)
        best = min(best, (time.perf_counter_ns() - started) / len(items) / 1000)
    return best


def main(argv: list[str]) -> None:
    _setup()
    from mcp_infra.telemetry.tally import request_tally
    from mcp_platform.observe import calls
    from mcp_platform.observe.calls import CallInfo, CallRecord, observed_call, register_hook, unregister_hook
    from mcp_platform.telemetry.hooks import MetricsHook, RequestLogHook
    from mcp_platform.telemetry.streams import OpenStreamsMiddleware

    iterations = int(argv[0]) if argv else ITERATIONS
    for hook in list(calls._hooks):
        unregister_hook(hook)

    def info(tenant: int = 1, method: str = "tools/call", target: str | None = "echo") -> CallInfo:
        return CallInfo(
            tenant_id=tenant,
            tenant_slug=f"bench-{tenant}",
            method=method,
            target=target,
            principal="",
            client_id="",
            client_name="bench",
            client_version="1",
            protocol_version="2026-07-28",
            transport="streamable-http",
            request_id="1",
            started=time.perf_counter(),
            started_at=time.time(),
            arguments=None,
            headers=None,
        )

    def one_call() -> None:
        with observed_call(info()) as call:
            call.succeed({"content": []})

    class NoHook:
        def started(self, info: CallInfo) -> object:
            return None

        def finished(self, record: CallRecord, token: object) -> None:
            return None

    results: dict[str, float] = {"observed_call, no hook": _best_of(ROUNDS, iterations, one_call)}
    # What the seam itself costs once any hook watches (the record built, the outcome classified).
    empty_hook = NoHook()
    register_hook(empty_hook)
    results["observed_call + a hook that does nothing"] = _best_of(ROUNDS, iterations, one_call)
    unregister_hook(empty_hook)
    metrics_hook = MetricsHook()
    register_hook(metrics_hook)
    results["observed_call + metrics hook"] = _best_of(ROUNDS, iterations, one_call)
    one = CallRecord(info=info(), duration_s=0.004, outcome="ok", error_code=None)
    results["metrics hook finished(), one label set"] = _best_of(
        ROUNDS, iterations, lambda: metrics_hook.finished(one, None)
    )
    # 4 tenants x (4 tools, tools/list, resources/read, prompts/get, ping) x ok/error: 64 label sets.
    targets: list[tuple[str, str | None]] = [("tools/call", f"tool-{n}") for n in range(4)]
    targets += [("tools/list", None), ("resources/read", "file:///a"), ("prompts/get", "p"), ("ping", None)]
    kinds = [
        CallRecord(info=info(tenant, method, target), duration_s=0.0003 * 1.7**n, outcome=outcome, error_code=None)
        for tenant in range(1, 5)
        for n, (method, target) in enumerate(targets)
        for outcome in ("ok", "error")
    ]
    mixed = (kinds * (iterations // len(kinds) + 1))[:iterations]
    results["metrics hook finished(), 64 label sets in turn"] = _best_per_item(
        ROUNDS, mixed, lambda record: metrics_hook.finished(record, None)
    )
    # The fold (a thread, once a second): what it takes to write 64 label sets' counts to the files.
    request_tally.fold()
    best = float("inf")
    for _ in range(ROUNDS * 4):
        for record in kinds * 10:
            metrics_hook.finished(record, None)
        started = time.perf_counter_ns()
        request_tally.fold()
        best = min(best, (time.perf_counter_ns() - started) / 1000)
    results["fold of 64 label sets (per fold, off the request path)"] = best
    logging.getLogger("mcp_platform.requests").addHandler(logging.NullHandler())
    logging.getLogger("mcp_platform.requests").setLevel(logging.INFO)
    logging.getLogger("mcp_platform.requests").propagate = False
    log_hook = RequestLogHook()
    register_hook(log_hook)
    results["observed_call + metrics + JSON log hooks"] = _best_of(ROUNDS, iterations, one_call)
    unregister_hook(log_hook)
    unregister_hook(metrics_hook)

    class Tenant:
        slug = "bench"

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})

    async def sink(message: dict[str, Any]) -> None:
        return None

    scope = {"type": "http", "method": "POST", "path": "/t/bench/mcp", "headers": [], "mcp.tenant": Tenant()}
    middleware = OpenStreamsMiddleware(app)

    async def through(wrapped: Any, count: int) -> float:
        started = time.perf_counter_ns()
        for _ in range(count):
            await wrapped(scope, None, sink)
        return (time.perf_counter_ns() - started) / count / 1000

    loop = asyncio.new_event_loop()
    bare = min(loop.run_until_complete(through(app, iterations // 4)) for _ in range(ROUNDS))
    wrapped = min(loop.run_until_complete(through(middleware, iterations // 4)) for _ in range(ROUNDS))
    loop.close()
    results["open-streams middleware, JSON response (added)"] = wrapped - bare

    for name, micros in results.items():
        print(f"{name:56s} {micros:7.2f} µs")


if __name__ == "__main__":
    main(sys.argv[1:])
