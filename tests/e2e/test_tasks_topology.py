"""Tasks in the production topology: started on one web process, followed, answered and cancelled on the other,
run by the separate Celery worker; everything between them travels through PostgreSQL and Redis."""

from __future__ import annotations

import secrets
from typing import Any

import anyio
import httpx

from tests.e2e.live import PRODUCTION_ONLY, LiveServer
from tests.e2e.raw_http import (
    RawSession,
    messages,
    raw_http_client,
    request_message,
    sse_events,
    stateless_headers,
    stateless_request,
)

pytestmark = PRODUCTION_ONLY

TEST_DEADLINE = 60.0
TASKS = "io.modelcontextprotocol/tasks"
# The e2e worker runs ``-c 4``: four runs at once, two of one tenant's (TASK_MAX_RUNNING_PER_TENANT's default).
WORKER_THREADS = 4
RUNNING_PER_TENANT = WORKER_THREADS // 2


def tasks_request(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 request from a client that declares the tasks extension."""
    return stateless_request(secrets.token_hex(4), method, params, capabilities={"extensions": {TASKS: {}}})


async def stateless(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name", params.get("taskId"))
    response = await http.post(url, json=tasks_request(method, params), headers=stateless_headers(method, name))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert "result" in answer, answer
    return answer["result"]


async def start(http: httpx.AsyncClient, url: str, seconds: float) -> str:
    created = await stateless(http, url, "tools/call", {"name": "slow_compute", "arguments": {"seconds": seconds}})
    assert created["resultType"] == "task", created
    return str(created["taskId"])


def listen(http: httpx.AsyncClient, url: str, task_ids: list[str]) -> Any:
    """``async with`` a subscriptions/listen stream following ``task_ids``."""
    message = tasks_request("subscriptions/listen", {"notifications": {"taskIds": task_ids}})
    return http.stream("POST", url, json=message, headers=stateless_headers("subscriptions/listen"))


async def test_a_task_started_on_a_is_followed_and_fetched_on_b_while_the_worker_runs_it(
    live_platform: LiveServer,
) -> None:
    on_a, on_b = live_platform.endpoint(web=0), live_platform.endpoint(web=1)
    async with raw_http_client() as http:
        with anyio.fail_after(TEST_DEADLINE):
            task_id = await start(http, on_a, 1)
            async with listen(http, on_b, [task_id]) as stream:
                assert stream.status_code == 200
                arriving = messages(sse_events(stream))
                ack = await anext(arriving)
                assert ack["params"]["notifications"] == {"taskIds": [task_id]}
                async for message in arriving:
                    if message["params"]["status"] not in ("working", "input_required"):
                        break
            fetched = await stateless(http, on_b, "tasks/get", {"taskId": task_id})
    assert message["method"] == "notifications/tasks" and message["params"]["status"] == "completed"
    assert fetched["status"] == "completed"
    assert fetched["result"]["content"] == [{"type": "text", "text": "Computed result after 1 second(s)"}]


async def test_cancelling_on_b_stops_the_runs_on_the_worker(live_platform: LiveServer) -> None:
    """The tenant holds as many worker threads as it may (half of them) with minute-long runs, and more wait their
    turn; once they are cancelled from B, a new task of the same tenant still finishes: the cancellation reached
    the worker and freed the tenant's share of its threads."""
    on_a, on_b = live_platform.endpoint(web=0), live_platform.endpoint(web=1)
    async with raw_http_client() as http:
        with anyio.fail_after(TEST_DEADLINE):
            long_ones = [await start(http, on_a, 60) for _ in range(WORKER_THREADS)]
            async with listen(http, on_b, long_ones) as stream:
                arriving = messages(sse_events(stream))
                await anext(arriving)  # the acknowledgement
                running: set[str] = set()
                async for message in arriving:
                    # A run reports progress as it starts: the worker is running it.
                    if message["params"].get("statusMessage", "").startswith("Computing"):
                        running.add(message["params"]["taskId"])
                    if len(running) == RUNNING_PER_TENANT:
                        break
            for task_id in long_ones:
                ack = await stateless(http, on_b, "tasks/cancel", {"taskId": task_id})
                assert {key for key in ack if key != "_meta"} == {"resultType"}
            quick = await start(http, on_a, 0)
            async with listen(http, on_b, [quick]) as stream:
                async for message in messages(sse_events(stream)):
                    if message.get("method") == "notifications/tasks" and message["params"]["status"] == "completed":
                        break
            statuses = [(await stateless(http, on_a, "tasks/get", {"taskId": t}))["status"] for t in long_ones]
    assert statuses == ["cancelled"] * WORKER_THREADS


async def test_tasks_result_on_b_asks_the_question_answered_on_a(live_platform: LiveServer) -> None:
    """2025-11-25: the task's question reaches the client on B's tasks/result stream; the answer, posted to A,
    travels back through Redis, the worker replays the call, and B's stream carries the result."""
    async with raw_http_client() as http:
        on_a = RawSession(http, live_platform.endpoint(web=0))
        with anyio.fail_after(TEST_DEADLINE):
            initialized = await on_a.initialize(capabilities={"elicitation": {"form": {}}})
            assert initialized["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
            created = await on_a.call(
                "tools/call", {"name": "confirm_delete", "arguments": {"filename": "x.txt"}, "task": {}}
            )
            task_id = created["result"]["task"]["taskId"]
            on_b = on_a.joined(live_platform.endpoint(web=1))
            result_id = on_b.next_id()
            async with on_b.stream_post(request_message(result_id, "tasks/result", {"taskId": task_id})) as stream:
                assert stream.status_code == 200
                questions = []
                async for event in sse_events(stream):
                    message = event.message()
                    if message is None:
                        continue
                    if message.get("method") == "elicitation/create":
                        questions.append(message)
                        answer = {"action": "accept", "content": {"confirm": True}}
                        posted = await on_a.post({"jsonrpc": "2.0", "id": message["id"], "result": answer})
                        assert posted.status_code == 202, posted.text
                    elif message.get("id") == result_id:
                        break
    (question,) = questions
    assert question["params"]["message"] == "Delete x.txt?"
    assert question["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert message["result"]["content"] == [{"type": "text", "text": "Deleted x.txt"}]
    assert message["result"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
