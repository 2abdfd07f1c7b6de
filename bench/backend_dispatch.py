"""What choosing a call's backend costs: ``tenants.backends``' dispatch against calling the backend module directly,
timed in process on unsaved rows (a short local measurement, not a load test).

``python -m bench.backend_dispatch [ITERATIONS]``: prints microseconds per call for a static tool, a Python tool, a
static template, a static prompt and the continue-as-task question, each through the dispatcher and straight to
its backend module, and the difference (what the dispatch adds). Coroutines are driven with ``send(None)``: none of
these backends suspends, so no event loop's cost hides the dispatch.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

ITERATIONS = 100_000
ROUNDS = 9


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcp_platform.settings")
    os.environ.setdefault("MCP_VAR_DIR", tempfile.mkdtemp(prefix="backend-dispatch-"))
    import django

    django.setup()


def _best_of_pair(
    rounds: int, iterations: int, first: Callable[[], Any], second: Callable[[], Any]
) -> tuple[float, float]:
    """Microseconds per iteration of each body, best round; their rounds alternate, so that the other work on the
    machine disturbs both alike."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for index, body in enumerate((first, second)):
            started = time.perf_counter_ns()
            for _ in range(iterations):
                body()
            best[index] = min(best[index], (time.perf_counter_ns() - started) / iterations / 1000)
    return best[0], best[1]


def _finish(awaitable: Any) -> Any:
    """The value of a coroutine that never suspends."""
    try:
        awaitable.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("the backend suspended: this bench times only backends that answer at once")


def main(argv: list[str]) -> None:
    _setup()
    from mcp_core.context import ToolContext
    from tenants import backends
    from tenants.backends import python, static
    from tenants.backends.registry import default_registry
    from tenants.models import Prompt, ResourceTemplate, Tool

    iterations = int(argv[0]) if argv else ITERATIONS

    async def bench_echo(ctx: ToolContext, text: str = "") -> str:
        return text

    default_registry.tool("bench.dispatch_echo")(bench_echo)
    static_tool = Tool(tenant_id=1, name="fixed", backend="static", config={"content": []})
    python_tool = Tool(tenant_id=1, name="echo", backend="python", config={"function": "bench.dispatch_echo"})
    template = ResourceTemplate(tenant_id=1, name="page", backend="static", config={"text": "page {n}"})
    prompt = Prompt(tenant_id=1, name="hello", backend="static", messages=[], arguments=[])
    ctx: Any = None
    arguments = {"text": "hi"}
    variables = {"n": "1"}

    pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "static tool": (
            lambda: _finish(backends.tool_invoke(static_tool, {}, ctx)),
            lambda: static.tool_invoke(static_tool),
        ),
        "python tool": (
            lambda: _finish(backends.tool_invoke(python_tool, arguments, ctx)),
            lambda: _finish(python.tool_invoke(python_tool, arguments, ctx)),
        ),
        "static template": (
            lambda: _finish(backends.template_read(template, "page://1", variables, ctx)),
            lambda: static.template_read(template, "page://1", variables),
        ),
        "static prompt": (
            lambda: _finish(backends.prompt_render(prompt, {}, ctx)),
            lambda: static.prompt_render(prompt, {}),
        ),
        "continues as task (python tool)": (
            lambda: backends.tool_continues_as_task(python_tool),
            lambda: python.tool_continues_as_task(python_tool),
        ),
    }
    for name, (dispatched, direct) in pairs.items():
        through, straight = _best_of_pair(ROUNDS, iterations, dispatched, direct)
        print(
            f"{name:34s} dispatched {through:6.3f} µs  direct {straight:6.3f} µs  dispatch {through - straight:6.3f} µs"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
