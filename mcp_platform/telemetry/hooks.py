"""The call hooks this app registers on the observation seam: request metrics, and one structured log line per
request (``LOG_FORMAT=json``). Both only touch memory (mmap'd counters, a log record), never the network."""

from __future__ import annotations

import logging

from mcp_platform.observe.calls import CallInfo, CallRecord
from mcp_platform.telemetry import metrics

# Its own logger, so a deployment can route or silence the request lines apart from the rest.
request_logger = logging.getLogger("mcp_platform.requests")


class MetricsHook:
    """Counts and times every JSON-RPC request; tools/call also per tool (label bounded per tenant)."""

    def started(self, info: CallInfo) -> object:
        return None

    def finished(self, record: CallRecord, token: object) -> None:
        info = record.info
        method = metrics.method_label(info.method)
        metrics.REQUESTS.labels(info.tenant_slug, method, record.outcome).inc()
        metrics.REQUEST_DURATION.labels(info.tenant_slug, method).observe(record.duration_s)
        if info.method == "tools/call" and info.target is not None:
            tool = metrics.tool_labels.label(info.tenant_id, info.target)
            metrics.TOOL_CALLS.labels(info.tenant_slug, tool, record.outcome).inc()


class RequestLogHook:
    """One log record per request with the facts an operator searches by. Never the arguments, headers, tokens
    or results: those may hold credentials and personal data (the JSON formatter writes only ``extra`` fields)."""

    def started(self, info: CallInfo) -> object:
        return None

    def finished(self, record: CallRecord, token: object) -> None:
        if not request_logger.isEnabledFor(logging.INFO):
            return
        info = record.info
        request_logger.info(
            "%s %s",
            info.method,
            record.outcome,
            extra={
                "mcp": {
                    "request_id": info.request_id,
                    "tenant": info.tenant_slug,
                    "principal": info.principal,
                    "client_id": info.client_id,
                    "method": metrics.method_label(info.method),
                    "target": info.target,
                    "outcome": record.outcome,
                    "error_code": record.error_code,
                    "duration_ms": round(record.duration_s * 1000, 3),
                    "protocol_version": info.protocol_version,
                    "transport": info.transport,
                }
            },
        )
