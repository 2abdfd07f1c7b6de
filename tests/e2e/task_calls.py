"""2026-07-28 tool calls that become tasks, as the fault and multi-host tests make and follow them over raw HTTP."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import anyio
import httpx

from tests.e2e.raw_http import stateless_headers, stateless_request

TASKS = "io.modelcontextprotocol/tasks"


async def stateless(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One 2026-07-28 request of a client that takes tasks; its result (a JSON-RPC error fails the test)."""
    name = params.get("name", params.get("taskId"))
    message = stateless_request(secrets.token_hex(4), method, params, capabilities={"extensions": {TASKS: {}}})
    response = await http.post(url, json=message, headers=stateless_headers(method, name))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert "result" in answer, answer
    return dict(answer["result"])


async def count_slowly(http: httpx.AsyncClient, url: str, steps: int, delay_ms: int = 1000) -> str:
    """Start the demo's ``count_slowly`` as a task; its id."""
    arguments = {"steps": steps, "delay_ms": delay_ms}
    created = await stateless(http, url, "tools/call", {"name": "count_slowly", "arguments": arguments})
    assert (created["resultType"], created["status"]) == ("task", "working"), created
    return str(created["taskId"])


async def task(http: httpx.AsyncClient, url: str, task_id: str) -> dict[str, Any]:
    return await stateless(http, url, "tasks/get", {"taskId": task_id})


async def until(
    http: httpx.AsyncClient,
    url: str,
    task_id: str,
    reached: Callable[[dict[str, Any]], bool],
    deadline: float,
    *,
    every: float | None = None,
) -> dict[str, Any]:
    """Poll the task until ``reached(task)``, every ``every`` seconds (None: at the interval it suggests); fail after
    ``deadline`` seconds."""
    with anyio.fail_after(deadline):
        while True:
            current = await task(http, url, task_id)
            if reached(current):
                return current
            await anyio.sleep(every if every is not None else current.get("pollIntervalMs", 1000) / 1000)


def counting(current: dict[str, Any]) -> bool:
    """The worker runs it: the call has reported progress (a 2026-07-28 task's progress is its status message)."""
    return current["status"] == "working" and "Counted" in str(current.get("statusMessage", ""))


def finished(current: dict[str, Any]) -> bool:
    return current["status"] != "working"


def counted_to(steps: int) -> list[dict[str, Any]]:
    return [{"type": "text", "text": f"Counted to {steps}."}]
