"""Metrics and traces in the production topology: two web processes and a Celery worker sharing one metrics
directory, calls of both eras on either web process, ``/metrics`` scraped from one of them; a task's trace carried
from the client through the web process into the worker; a killed process's open streams dropped."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.faults import Topology, start_topology
from tests.e2e.live import PRODUCTION_ONLY
from tests.e2e.raw_http import (
    RawSession,
    raw_http_client,
    sse_events,
    stateless_headers,
    stateless_request,
)

pytestmark = PRODUCTION_ONLY

TEST_DEADLINE = 60.0
TASKS = "io.modelcontextprotocol/tasks"
CLIENT_TRACE = secrets.token_hex(16)
CLIENT_SPAN = secrets.token_hex(8)


@pytest.fixture(scope="module")
def topology(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    tmp = tmp_path_factory.mktemp("metrics-topology")
    extra_env = {
        # One directory for every process of the host, as a deployment sets it.
        "PROMETHEUS_MULTIPROC_DIR": str(tmp / "prometheus"),
        # Traces printed by each process (the SDK's console exporter), read back from their logs.
        "MCP_TRACING": "1",
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    (tmp / "prometheus").mkdir()
    with ExitStack() as stack:
        yield start_topology(stack, tmp, extra_env=extra_env)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


async def scrape(
    http: httpx.AsyncClient, topology: Topology, web: int
) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = await http.get(f"{topology.web_urls[web]}/metrics")
    assert response.status_code == 200, response.text
    return samples(response.text)


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


async def scrape_until(http: httpx.AsyncClient, topology: Topology, web: int, done: Any) -> dict[Any, float]:
    """Scrape until ``done(samples)`` holds (the worker reports when its runs end); bounded by the test's deadline."""
    while True:
        found = await scrape(http, topology, web)
        if done(found):
            return found
        await anyio.sleep(0.2)


async def test_calls_on_both_web_processes_and_the_workers_runs_add_up_in_one_scrape(topology: Topology) -> None:
    tool = {"tenant": "conformance", "server": "", "tool": "test_simple_text", "outcome": "ok"}
    task_run = {"task": "mcp_platform.jobs.tasks.tool_run_execute", "state": "SUCCESS"}
    async with raw_http_client() as http:
        with anyio.fail_after(TEST_DEADLINE):
            for web in (0, 1):  # 2026-07-28 on both
                call = stateless_request(web + 1, "tools/call", {"name": "test_simple_text", "arguments": {}})
                response = await http.post(
                    topology.endpoint(web=web), json=call, headers=stateless_headers("tools/call", "test_simple_text")
                )
                assert response.status_code == 200, response.text
            session = RawSession(http, topology.endpoint(web=0))  # a handshake session, on A then B
            await session.initialize()
            for joined in (session, session.joined(topology.endpoint(web=1))):
                answer = await joined.call("tools/call", {"name": "test_simple_text", "arguments": {}})
                assert "result" in answer, answer
            # A task: created by web B, run by the worker, traced from the client's context.
            task = stateless_request(
                9,
                "tools/call",
                {"name": "slow_compute", "arguments": {"seconds": 0}},
                capabilities={"extensions": {TASKS: {}}},
            )
            headers = {
                **stateless_headers("tools/call", "slow_compute"),
                "traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01",
            }
            created = await http.post(topology.endpoint(web=1), json=task, headers=headers)
            assert created.json()["result"]["resultType"] == "task", created.text

            # Web B's requests reach the files within MCP_METRICS_FOLD_SECONDS (its own scrape would fold them).
            found = await scrape_until(
                http,
                topology,
                0,
                lambda found: (
                    value(found, "mcp_celery_tasks_total", **task_run) >= 1
                    and value(found, "mcp_tasks", tenant="conformance", status="completed") >= 1
                    and value(
                        found,
                        "mcp_request_duration_seconds_count",
                        tenant="conformance",
                        server="",
                        method="tools/call",
                    )
                    >= 5
                ),
            )
            from_b = await scrape(http, topology, 1)
    assert value(found, "mcp_tool_calls_total", **tool) == 4
    assert value(from_b, "mcp_tool_calls_total", **tool) == 4, "every web process answers for the host"
    assert value(found, "mcp_tool_calls_total", tenant="conformance", server="", tool="slow_compute", outcome="ok") == 1
    assert value(found, "mcp_request_duration_seconds_count", tenant="conformance", server="", method="tools/call") == 5
    assert value(found, "mcp_celery_task_duration_seconds_count", task=task_run["task"]) >= 1


def _logged(topology: Topology, name: str) -> str:
    process = next(p for p in topology.processes() if p.name == name)
    return Path(process.stdout_path).read_text(errors="replace")


async def _until_logged(topology: Topology, name: str, text: str) -> None:
    """Wait until process ``name`` printed ``text`` (spans are exported in batches); bounded by the caller."""
    while True:
        if text in _logged(topology, name):
            return
        await anyio.sleep(0.2)


async def test_the_tasks_trace_continues_in_the_worker(topology: Topology) -> None:
    """The client's trace id, sent with the task's tools/call to web B, names the worker's span of the run."""
    trace_id = f'"trace_id": "0x{CLIENT_TRACE}"'
    with anyio.fail_after(TEST_DEADLINE):
        for process in ("worker-0", "web-1"):
            await _until_logged(topology, process, trace_id)
    worker = _logged(topology, "worker-0")
    assert '"name": "celery.run mcp_platform.jobs.tasks.tool_run_execute"' in worker
    assert '"name": "tool slow_compute"' in worker
    assert '"name": "tools/call slow_compute"' in _logged(topology, "web-1")


async def test_a_killed_web_process_open_stream_is_no_longer_counted(topology: Topology) -> None:
    streams = {"tenant": "conformance", "kind": "get"}
    listen = stateless_request("listen", "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    async with raw_http_client() as http:
        with anyio.fail_after(TEST_DEADLINE):
            session = RawSession(http, topology.endpoint(web=1))
            await session.initialize()
            async with session.stream_get() as stream:
                assert stream.status_code == 200
                # Kept referenced: a dropped event iterator closes the response (the client would have left).
                events = sse_events(stream)
                await anext(events)  # the priming event: the stream is open
                while_open = await scrape(http, topology, 0)
                topology.kill_web(1)  # SIGKILL: web B never decrements its count
            after_kill = await scrape(http, topology, 0)
            async with http.stream(
                "POST", topology.endpoint(web=0), json=listen, headers=stateless_headers("subscriptions/listen")
            ) as listening:
                assert listening.status_code == 200
                acknowledgements = sse_events(listening)
                await anext(acknowledgements)
                while_listening = await scrape(http, topology, 0)
            after_listening = await scrape(http, topology, 0)
    assert value(while_open, "mcp_open_streams", **streams) == 1
    assert value(after_kill, "mcp_open_streams", **streams) == 0
    assert value(while_listening, "mcp_open_streams", tenant="conformance", kind="listen") == 1
    assert value(after_listening, "mcp_open_streams", tenant="conformance", kind="listen") == 0
