"""Traces with the real OpenTelemetry SDK (in-memory exporter): HTTP request → JSON-RPC method → tool → outbound
HTTP, the client's trace context honoured from the HTTP header and from ``_meta``; and nothing at all when off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import ApplicationCommunicator
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp_core.env import Env, ServerIdentity
from mcp_core.features.tools import call_tool
from mcp_infra.outbound import outbound_clients_close
from mcp_platform.asgi import application
from mcp_platform.telemetry import tracing
from mcp_platform.telemetry.tracing import TracingMiddleware
from tenants import services
from tenants.catalog import TenantCatalog
from tests.factories import TenantFactory
from tests.gateway.conftest import http_scope, rpc
from tests.loopback_http import loopback_server
from tests.support import RecordingOutbound
from tests.telemetry.conftest import metric_value

REPO = Path(__file__).resolve().parents[2]
MCP = "/t/conformance/mcp"
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
META_TRACE = "0af7651916cd43dd8448eb211c80319c"
META_SPAN = "b7ad6b7169203331"

_exporter = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(_exporter))


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    # The global provider can be set once per process: every test of this module shares it.
    if trace.get_tracer_provider() is not _provider:
        trace.set_tracer_provider(_provider)
    _exporter.clear()
    tracing.tracing_start()
    yield _exporter
    tracing.tracing_stop()


def by_name(finished: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    [found] = [span for span in finished if span.name == name]
    return found


def parent_of(span: ReadableSpan) -> str:
    assert span.parent is not None, f"{span.name} has no parent"
    return format(span.parent.span_id, "016x")


def span_id(span: ReadableSpan) -> str:
    return format(span.context.span_id, "016x")


async def traced_post(body: Any, headers: dict[str, str]) -> dict[str, Any]:
    all_headers = {"host": "127.0.0.1:8000", "content-type": "application/json"}
    all_headers |= {"accept": "application/json, text/event-stream", **headers}
    communicator = ApplicationCommunicator(TracingMiddleware(application), http_scope("POST", MCP, all_headers))
    await communicator.send_input({"type": "http.request", "body": json.dumps(body).encode(), "more_body": False})
    start = await communicator.receive_output(5)
    chunk = await communicator.receive_output(5)
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(5)
    assert start["status"] == 200, chunk
    reply: dict[str, Any] = json.loads(chunk["body"])
    return reply


def stateless(name: str, extra_meta: dict[str, str] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        **(extra_meta or {}),
    }
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": name}
    return rpc("tools/call", {"name": name, "arguments": {}, "_meta": meta}), headers


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_tool_call_nests_in_the_clients_trace(conformance: None, spans: InMemorySpanExporter) -> None:
    body, headers = stateless("test_simple_text")
    headers["traceparent"] = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
    reply = await traced_post(body, headers)
    assert reply["result"]["content"][0]["type"] == "text"

    finished = spans.get_finished_spans()
    http = by_name(finished, "POST /t/{tenant}/mcp")
    method = by_name(finished, "tools/call test_simple_text")
    tool = by_name(finished, "tool test_simple_text")
    assert {format(s.context.trace_id, "032x") for s in (http, method, tool)} == {CLIENT_TRACE}
    assert parent_of(http) == CLIENT_SPAN
    assert parent_of(method) == span_id(http)
    assert parent_of(tool) == span_id(method)
    assert method.attributes is not None and http.attributes is not None
    assert method.attributes["mcp.method.name"] == "tools/call"
    assert method.attributes["gen_ai.tool.name"] == "test_simple_text"
    assert method.attributes["mcp_platform.outcome"] == "ok"
    assert http.attributes["http.response.status_code"] == 200


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_trace_context_in_meta_wins_over_the_http_header(conformance: None, spans: InMemorySpanExporter) -> None:
    body, headers = stateless("test_error_handling", {"traceparent": f"00-{META_TRACE}-{META_SPAN}-01"})
    headers["traceparent"] = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
    await traced_post(body, headers)

    method = by_name(spans.get_finished_spans(), "tools/call test_error_handling")
    assert format(method.context.trace_id, "032x") == META_TRACE
    assert parent_of(method) == META_SPAN
    assert method.status.status_code == trace.StatusCode.ERROR
    assert method.attributes is not None and method.attributes["mcp_platform.outcome"] == "tool_error"


@pytest.mark.django_db
def test_an_http_tool_request_is_a_client_span_of_its_tool_and_is_counted(
    settings: Any, spans: InMemorySpanExporter
) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}
    tenant = TenantFactory(slug="traced-http")
    with loopback_server() as server:
        services.tool_create(
            tenant=tenant, name="hello", backend="http", config={"method": "GET", "url": server.base + "/hello"}
        )
        before = metric_value("mcp_http_tool_calls_total", tenant="traced-http", outcome="2xx")

        async def run() -> dict[str, Any]:
            env = Env(
                version="2025-11-25",
                catalog=TenantCatalog(tenant),
                outbound=RecordingOutbound(),
                server=ServerIdentity("t", "1"),
            )
            try:
                return await call_tool({"name": "hello", "arguments": {}}, env)
            finally:
                await outbound_clients_close()

        result = async_to_sync(run)()
    assert result.get("isError") is not True, result
    finished = spans.get_finished_spans()
    tool = by_name(finished, "tool hello")
    outbound = by_name(finished, "GET 127.0.0.1")
    assert parent_of(outbound) == span_id(tool)
    assert outbound.kind == trace.SpanKind.CLIENT
    assert outbound.attributes is not None and outbound.attributes["http.response.status_code"] == 200
    assert metric_value("mcp_http_tool_calls_total", tenant="traced-http", outcome="2xx") == before + 1
    assert metric_value("mcp_http_tool_call_duration_seconds_count", tenant="traced-http") >= 1


def test_with_tracing_off_no_tracing_code_is_loaded_nor_hooked(tmp_path: Path) -> None:
    # The official MCP SDK imports the opentelemetry API itself, and redis-py imports its SDK when installed: what
    # stays off is the platform's tracing module, its hook and middleware, and any tracer provider of our own.
    script = (
        "import sys, django; django.setup();"
        "from mcp_platform import asgi; from mcp_platform.observe import calls;"
        "print(sorted({'MetricsHook', 'TracingHook'} & {type(hook).__name__ for hook in calls._hooks}),"
        " type(asgi.application).__name__,"
        " 'mcp_platform.telemetry.tracing' in sys.modules,"
        " type(sys.modules['opentelemetry.trace'].get_tracer_provider()).__name__"
        " if 'opentelemetry.trace' in sys.modules else 'none')"
    )
    env = {**os.environ, "MCP_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "mcp_platform.settings"}
    for name in ("MCP_TRACING", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "LOG_FORMAT"):
        env.pop(name, None)
    off = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert off.stdout.strip() == "['MetricsHook'] RequestLimitsMiddleware False ProxyTracerProvider", off.stderr
    on = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env={**env, "MCP_TRACING": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert on.stdout.strip() == "['MetricsHook', 'TracingHook'] TracingMiddleware True TracerProvider", on.stderr
