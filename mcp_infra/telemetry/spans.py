"""Spans at the platform's edges (a tool run, an outbound HTTP request, an upstream call), or nothing at all.

Call sites use ``span(...)`` unconditionally; until ``tracing.tracing_start`` installs a tracer it returns one shared
no-op context manager, so with tracing off the cost is one global read and opentelemetry is never imported.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, MutableMapping
from typing import Any

_NOTHING = contextlib.nullcontext()
# Set once at start-up by ``mcp_platform.telemetry.tracing`` when tracing is on (configuration, not state).
_tracer: Any = None
_inject: Any = None


def tracing_requested(environ: Mapping[str, str] = os.environ) -> bool:
    """Tracing is on with ``MCP_TRACING=1``, or with an OTLP endpoint configured (unless ``MCP_TRACING=0``)."""
    flag = environ.get("MCP_TRACING", "").strip().lower()
    if flag in {"0", "false", "no", "off"}:
        return False
    if flag in {"1", "true", "yes", "on"}:
        return True
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def tracing_on() -> bool:
    return _tracer is not None


def span(name: str, *, client: bool = False, attributes: Mapping[str, Any] | None = None) -> Any:
    """A span named ``name`` around a block, current inside it (``client``: an outgoing call). Exceptions that
    leave the block are recorded on it."""
    if _tracer is None:
        return _NOTHING
    from opentelemetry.trace import SpanKind

    kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
    return _tracer.start_as_current_span(name, kind=kind, attributes=dict(attributes or {}))


def inject_context(headers: MutableMapping[str, str]) -> None:
    """Add the current trace context (``traceparent``, ``tracestate``) to outgoing ``headers`` when tracing."""
    if _inject is not None:
        _inject(headers)


def install(tracer: Any, inject: Any) -> None:
    global _tracer, _inject
    _tracer, _inject = tracer, inject


def uninstall() -> None:
    global _tracer, _inject
    _tracer, _inject = None, None
