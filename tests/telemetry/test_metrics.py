"""Request, tool-call, stream, task and Celery metrics, counted through the real ASGI stack and read back from the
multi-process files as ``/metrics`` reads them."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from channels.testing import ApplicationCommunicator
from django.test import AsyncClient
from prometheus_client.parser import text_string_to_metric_families

from mcp_infra.telemetry import metrics
from mcp_infra.telemetry.metrics import NameLabels, method_label
from mcp_infra.telemetry.tally import request_tally
from mcp_platform.asgi import application
from mcp_platform.jobs.tasks import tool_runs_purge_expired
from mcp_platform.telemetry.celery_metrics import task_label
from mcp_platform.telemetry.views import reap_dead_processes
from tests.gateway.conftest import INIT_PARAMS, http_scope, request, rpc
from tests.telemetry.conftest import metric_value

MCP = "/t/conformance/mcp"
STATELESS_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "metrics-tests", "version": "1"},
}


async def stateless_call(tool: str, id: int = 1) -> None:
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": tool}
    params = {"name": tool, "arguments": {}, "_meta": STATELESS_META}
    reply = await request("POST", MCP, body=rpc("tools/call", params, id=id), headers=headers)
    assert reply.status == 200, reply.body


async def handshake_session() -> str:
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS))
    session = reply.headers["mcp-session-id"]
    done = await request(
        "POST", MCP, body=rpc("notifications/initialized", id=None), headers={"mcp-session-id": session}
    )
    assert done.status == 202
    return session


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_tool_calls_of_both_eras_are_counted_per_tenant_tool_and_outcome(conformance: None) -> None:
    ok = {"tenant": "conformance", "server": "", "tool": "test_simple_text", "outcome": "ok"}
    failed = {"tenant": "conformance", "server": "", "tool": "test_error_handling", "outcome": "tool_error"}
    requests = {"tenant": "conformance", "server": "", "method": "tools/call", "outcome": "ok"}
    before = (metric_value("mcp_tool_calls_total", **ok), metric_value("mcp_tool_calls_total", **failed))
    requests_before = metric_value("mcp_requests_total", **requests)
    histogram_before = metric_value(
        "mcp_request_duration_seconds_count", tenant="conformance", server="", method="tools/call"
    )

    await stateless_call("test_simple_text")
    await stateless_call("test_error_handling", id=2)
    session = await handshake_session()
    call = rpc("tools/call", {"name": "test_simple_text", "arguments": {}}, id=3)
    reply = await request("POST", MCP, body=call, headers={"mcp-session-id": session})
    assert reply.messages()[0]["result"]["content"][0]["text"].startswith("This is a simple text")

    assert metric_value("mcp_tool_calls_total", **ok) == before[0] + 2
    assert metric_value("mcp_tool_calls_total", **failed) == before[1] + 1
    assert metric_value("mcp_requests_total", **requests) == requests_before + 2
    histogram = metric_value("mcp_request_duration_seconds_count", tenant="conformance", server="", method="tools/call")
    assert histogram == histogram_before + 3


async def scraped(name: str, **labels: str) -> float:
    """Sample ``name`` with ``labels`` in this process's ``/metrics`` (0 when absent)."""
    response = await AsyncClient().get("/metrics")
    assert response.status_code == 200
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return 0.0


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_scrape_of_the_process_that_answered_shows_its_requests_at_once(conformance: None) -> None:
    # No fold forced here: /metrics folds this process's tally itself before it reads the files.
    requests = {"tenant": "conformance", "server": "", "method": "tools/call", "outcome": "ok"}
    tool = {"tenant": "conformance", "server": "", "tool": "test_simple_text", "outcome": "ok"}
    duration = {"tenant": "conformance", "server": "", "method": "tools/call"}
    before = [
        await scraped("mcp_requests_total", **requests),
        await scraped("mcp_tool_calls_total", **tool),
        await scraped("mcp_request_duration_seconds_count", **duration),
    ]
    await stateless_call("test_simple_text")
    await stateless_call("test_simple_text", id=2)
    assert await scraped("mcp_requests_total", **requests) == before[0] + 2
    assert await scraped("mcp_tool_calls_total", **tool) == before[1] + 2
    assert await scraped("mcp_request_duration_seconds_count", **duration) == before[2] + 2


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_scrape_still_answers_when_its_fold_cannot_write(
    conformance: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    requests = {"tenant": "conformance", "server": "", "method": "tools/call", "outcome": "ok"}
    before = await scraped("mcp_requests_total", **requests)
    await stateless_call("test_simple_text")

    def disk_full(pending: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(request_tally, "_publish", disk_full)
    assert await scraped("mcp_requests_total", **requests) == before, "the files as they were, and a 200"
    assert "could not add this process's request counts" in caplog.text


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_an_unknown_method_is_counted_under_other_not_under_its_name(conformance: None) -> None:
    session = await handshake_session()
    labels = {"tenant": "conformance", "server": "", "method": "_other", "outcome": "error"}
    before = metric_value("mcp_requests_total", **labels)
    reply = await request("POST", MCP, body=rpc("made/up-by-a-client", {}), headers={"mcp-session-id": session})
    assert reply.messages()[0]["error"]["code"] == -32601
    assert metric_value("mcp_requests_total", **labels) == before + 1
    assert (
        metric_value(
            "mcp_requests_total", tenant="conformance", server="", method="made/up-by-a-client", outcome="error"
        )
        == 0
    )


def test_tool_names_past_the_cap_share_one_label(settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "METRICS_MAX_TOOLS_PER_TENANT": 2}
    labels = NameLabels()
    assert [labels.label(1, name) for name in ("a", "b", "c", "a", "d")] == ["a", "b", "_other", "a", "_other"]
    assert labels.label(2, "c") == "c", "each tenant has its own allowance"
    assert method_label("tools/call") == "tools/call" and method_label("x/y") == "_other"


async def _open_get_stream(session: str) -> ApplicationCommunicator:
    headers = {"host": "127.0.0.1:8000", "accept": "text/event-stream", "mcp-session-id": session}
    communicator = ApplicationCommunicator(application, http_scope("GET", MCP, headers))
    await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await communicator.receive_output(5)
    assert start["status"] == 200
    await communicator.receive_output(5)  # the priming event
    return communicator


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_an_open_get_stream_is_counted_until_the_client_leaves(conformance: None) -> None:
    labels = {"tenant": "conformance", "kind": "get"}
    before = metric_value("mcp_open_streams", **labels)
    session = await handshake_session()
    stream = await _open_get_stream(session)
    try:
        assert metric_value("mcp_open_streams", **labels) == before + 1
    finally:
        await stream.send_input({"type": "http.disconnect"})
        await stream.wait(5)
    assert metric_value("mcp_open_streams", **labels) == before


@pytest.mark.django_db(transaction=True)
def test_celery_task_runs_are_timed_by_task_name() -> None:
    name = "mcp_platform.jobs.tasks.tool_runs_purge_expired"
    before = metric_value("mcp_celery_task_duration_seconds_count", task=name)
    done_before = metric_value("mcp_celery_tasks_total", task=name, state="SUCCESS")
    tool_runs_purge_expired.apply()
    assert metric_value("mcp_celery_task_duration_seconds_count", task=name) == before + 1
    assert metric_value("mcp_celery_tasks_total", task=name, state="SUCCESS") == done_before + 1
    assert task_label("someone.elses.task") == "_other"


def test_a_dead_process_open_streams_are_dropped_and_its_counters_kept(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    directory = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    # What a process killed with SIGKILL leaves: its live gauge file and its counter file.
    mine = os.getpid()
    metrics.OPEN_STREAMS.labels("reaping", "get").inc()
    metrics.REQUESTS.labels("reaping", "", "tools/list", "ok").inc()
    try:
        gauge_file = directory / f"gauge_livesum_{dead.pid}.db"
        counter_file = directory / f"counter_{dead.pid}.db"
        gauge_file.write_bytes((directory / f"gauge_livesum_{mine}.db").read_bytes())
        counter_file.write_bytes((directory / f"counter_{mine}.db").read_bytes())
        assert metric_value("mcp_open_streams", tenant="reaping", kind="get") == 2
        # Processes the rest of the run started share the directory; any of them that ended are reaped too.
        assert dead.pid in reap_dead_processes(str(directory))
        assert not gauge_file.exists() and counter_file.exists()
        assert metric_value("mcp_open_streams", tenant="reaping", kind="get") == 1
        assert metric_value("mcp_requests_total", tenant="reaping", server="", method="tools/list", outcome="ok") >= 2
    finally:
        metrics.OPEN_STREAMS.labels("reaping", "get").dec()
        (directory / f"counter_{dead.pid}.db").unlink(missing_ok=True)


def test_the_stream_counter_comes_back_to_zero_when_the_app_fails() -> None:
    from mcp_platform.telemetry.streams import OpenStreamsMiddleware

    class Tenant:
        slug = "failing"

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        raise RuntimeError("the consumer died mid-stream")

    async def send(message: dict[str, Any]) -> None:
        assert metric_value("mcp_open_streams", tenant="failing", kind="legacy_sse") == 1

    scope = {"type": "http", "method": "GET", "path": "/t/failing/sse", "headers": [], "mcp.tenant": Tenant()}
    with pytest.raises(RuntimeError):
        asyncio.run(OpenStreamsMiddleware(app)(scope, None, send))
    assert metric_value("mcp_open_streams", tenant="failing", kind="legacy_sse") == 0
