"""OpenTelemetry traces (the ``otel`` extra): HTTP request → JSON-RPC method → tool → outbound HTTP and upstream
calls, and Celery task runs continued from the request that queued them.

Imported only when tracing is on (``MCP_TRACING=1``, or an ``OTEL_EXPORTER_OTLP_ENDPOINT`` set): with it off no
opentelemetry module is loaded and no hook is registered. A W3C ``traceparent`` from the client is honoured, in
the HTTP headers or, per JSON-RPC request, in ``params._meta`` (MCP's convention for trace context, SEP-414).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from celery.signals import before_task_publish, task_postrun, task_prerun
from opentelemetry import context, propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from mcp_infra.serving.probes import PROBE_PATHS
from mcp_infra.telemetry import spans
from mcp_platform.observe.calls import CallInfo, CallRecord, register_hook, unregister_hook

TRACER_NAME = "mcp_platform"
ERROR_OUTCOMES = frozenset({"error", "tool_error"})


def _tracer() -> trace.Tracer:
    return trace.get_tracer(TRACER_NAME)


def _provider_from_environment() -> None:
    """An SDK provider exporting as ``OTEL_TRACES_EXPORTER`` says (otlp over HTTP, console, none), unless the
    process already set one (a test, a distro)."""
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(
        resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "mcp-platform")})
    )
    # OpenTelemetry's own variable and default (otlp: OTEL_EXPORTER_OTLP_ENDPOINT, else localhost:4318).
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # Batched in a thread of its own: a slow collector never holds up a request.
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    elif exporter == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)


def _parent_context(info: CallInfo) -> context.Context | None:
    """The context the request's span continues: the request's own trace context (``_meta``'s, folded into the
    headers by the gateway, else the HTTP header's) unless the HTTP request's span already continues it, in which
    case that span (the current one) is the parent. None: the current context."""
    headers = info.headers
    if headers is None or "traceparent" not in headers:
        return None
    extracted = propagate.extract(headers)
    remote = trace.get_current_span(extracted).get_span_context()
    continued = getattr(trace.get_current_span(), "parent", None)  # what the HTTP request's span continues
    if continued is not None and (continued.trace_id, continued.span_id) == (remote.trace_id, remote.span_id):
        return None
    return extracted


class TracingHook:
    """The JSON-RPC request's span, current while it is dispatched (so tool, outbound and upstream spans nest)."""

    def started(self, info: CallInfo) -> object:
        parent = _parent_context(info)
        name = f"{info.method} {info.target}" if info.target else info.method
        attributes: dict[str, Any] = {
            "mcp.method.name": info.method,
            "mcp.protocol.version": info.protocol_version,
            "jsonrpc.request.id": info.request_id,
            "mcp_platform.tenant": info.tenant_slug,
            "mcp_platform.transport": info.transport,
        }
        if info.method == "tools/call" and info.target:
            attributes["gen_ai.tool.name"] = info.target
        elif info.method == "prompts/get" and info.target:
            attributes["gen_ai.prompt.name"] = info.target
        elif info.method == "resources/read" and info.target:
            attributes["mcp.resource.uri"] = info.target
        span = _tracer().start_span(name, context=parent, kind=SpanKind.SERVER, attributes=attributes)
        return span, context.attach(trace.set_span_in_context(span, parent))

    def finished(self, record: CallRecord, token: object) -> None:
        assert isinstance(token, tuple)
        span: trace.Span = token[0]
        attached: object = token[1]
        span.set_attribute("mcp_platform.outcome", record.outcome)
        if record.error_code is not None:
            span.set_attribute("rpc.jsonrpc.error_code", record.error_code)
        if record.outcome in ERROR_OUTCOMES:
            span.set_status(Status(StatusCode.ERROR, record.outcome))
        span.end()
        context.detach(attached)  # type: ignore[arg-type]


class TracingMiddleware:
    """ASGI: one server span per HTTP request, continuing the client's ``traceparent`` header."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in PROBE_PATHS:
            # Health probes come every few seconds and mean nothing to a trace.
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", ())}
        parts = scope.get("path", "").split("/")
        # /t/<tenant>/<endpoint> names one route whatever the tenant (span names must stay few).
        route = "/t/{tenant}/" + parts[3] if len(parts) >= 4 and parts[1] == "t" else scope.get("path", "")
        method = scope.get("method", "GET")
        attributes = {"http.request.method": method, "url.path": scope.get("path", ""), "http.route": route}
        with _tracer().start_as_current_span(
            f"{method} {route}", context=propagate.extract(headers), kind=SpanKind.SERVER, attributes=attributes
        ) as span:

            async def traced_send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_status(Status(StatusCode.ERROR))
                await send(message)

            await self.app(scope, receive, traced_send)


# ---- Celery: the context travels in the task message's headers ---------------------------------------------

_task_spans: dict[str, tuple[Any, object]] = {}
_task_spans_lock = threading.Lock()


def _inject_into_message(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    if headers is not None:
        propagate.inject(headers)


def _task_started(task_id: str = "", task: Any = None, **kwargs: Any) -> None:
    request = getattr(task, "request", None)
    carrier = {
        key: value for key in ("traceparent", "tracestate") if isinstance(value := getattr(request, key, None), str)
    }
    span = _tracer().start_span(
        f"celery.run {getattr(task, 'name', '?')}",
        context=propagate.extract(carrier),
        kind=SpanKind.CONSUMER,
        attributes={"messaging.system": "celery", "celery.task_name": getattr(task, "name", "?")},
    )
    attached = context.attach(trace.set_span_in_context(span))
    with _task_spans_lock:
        _task_spans[task_id] = (span, attached)


def _task_finished(task_id: str = "", state: str | None = None, **kwargs: Any) -> None:
    with _task_spans_lock:
        entry = _task_spans.pop(task_id, None)
    if entry is None:
        return
    span, attached = entry
    span.set_attribute("celery.state", state or "")
    if state == "FAILURE":
        span.set_status(Status(StatusCode.ERROR))
    span.end()
    context.detach(attached)  # type: ignore[arg-type]


_started: TracingHook | None = None


def tracing_start() -> None:
    """Turn tracing on in this process (once): provider, call hook, edge spans, Celery propagation."""
    global _started
    if _started is not None:
        return
    _started = TracingHook()
    _provider_from_environment()
    register_hook(_started)
    spans.install(_tracer(), propagate.inject)
    before_task_publish.connect(_inject_into_message, weak=False)
    task_prerun.connect(_task_started, weak=False)
    task_postrun.connect(_task_finished, weak=False)


def tracing_stop() -> None:
    """Turn tracing off again in this process (tests); the provider stays."""
    global _started
    if _started is None:
        return
    unregister_hook(_started)
    _started = None
    spans.uninstall()
    before_task_publish.disconnect(_inject_into_message)
    task_prerun.disconnect(_task_started)
    task_postrun.disconnect(_task_finished)
