"""The call hooks this app registers on the observation seam: request metrics, and one structured log line per
request (``LOG_FORMAT=json``). Both only touch this process's memory (a tally, a queued log record), never a file
or the network."""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from typing import Any

from mcp_infra.telemetry import metrics
from mcp_infra.telemetry.tally import request_tally
from mcp_platform.observe.calls import CallInfo, CallRecord

# Its own logger, so a deployment can route or silence the request lines apart from the rest.
request_logger = logging.getLogger("mcp_platform.requests")
# Lines waiting for the writer thread; past this a burst drops lines rather than memory or latency.
QUEUE_CAPACITY = 10_000


class MetricsHook:
    """Counts and times every JSON-RPC request by tenant and server; tools/call also per tool (label bounded per
    tenant). The counts go to this process's tally (``telemetry.tally``), which folds them into the metrics files
    off the request path."""

    def started(self, info: CallInfo) -> object:
        return None

    def finished(self, record: CallRecord, token: object) -> None:
        info = record.info
        # The method as labelled (a client may send any method name: the key must stay as bounded as the labels).
        method = metrics.method_label(info.method)
        tool = None
        if method == "tools/call" and info.target is not None:
            tool = metrics.tool_labels.label(info.tenant_id, info.target)
        request_tally.record(
            tenant=info.tenant_slug,
            server=info.server,
            method=method,
            outcome=record.outcome,
            tool=tool,
            duration=record.duration_s,
        )


class RequestLogHook:
    """One log record per request with the facts an operator searches by. Never the arguments, headers, tokens
    or results: those may hold credentials and personal data (the JSON formatter writes only the ``mcp`` fields).

    The request only queues the line; a thread of this process writes it, so a slow log sink never holds up a
    request. A full queue drops the line and counts it (``mcp_log_lines_dropped_total``)."""

    def __init__(self, capacity: int = QUEUE_CAPACITY) -> None:
        self._queue: queue.Queue[tuple[str, str, dict[str, Any]]] = queue.Queue(maxsize=capacity)
        self._writer: threading.Thread | None = None
        self._writer_pid = 0
        self._lock = threading.Lock()

    def started(self, info: CallInfo) -> object:
        return None

    def finished(self, record: CallRecord, token: object) -> None:
        if not request_logger.isEnabledFor(logging.INFO):
            return
        info = record.info
        fields: dict[str, Any] = {
            "request_id": info.request_id,
            "tenant": info.tenant_slug,
            "server": info.server,
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
        self._ensure_writer()
        try:
            self._queue.put_nowait((str(fields["method"]), record.outcome, fields))
        except queue.Full:
            metrics.LOG_LINES_DROPPED.labels(request_logger.name).inc()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued line is written (tests, shutdown); False when ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def _ensure_writer(self) -> None:
        # A forked child has no thread of its parent's: start its own.
        if self._writer_pid == os.getpid():
            return
        with self._lock:
            if self._writer_pid != os.getpid():
                self._writer = threading.Thread(target=self._write_forever, name="request-log-writer", daemon=True)
                self._writer.start()
                self._writer_pid = os.getpid()

    def _write_forever(self) -> None:
        while True:
            method, outcome, fields = self._queue.get()
            try:
                request_logger.info("%s %s", method, outcome, extra={"mcp": fields})
            except Exception:  # a broken handler must not stop the writer
                logging.getLogger(__name__).exception("could not write a request log line")
            finally:
                self._queue.task_done()
