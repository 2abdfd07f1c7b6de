"""Celery task runs in the worker, timed from ``task_prerun`` to ``task_postrun`` (the worker's own signals)."""

from __future__ import annotations

import threading
import time
from typing import Any

from celery.signals import task_postrun, task_prerun

from mcp_infra.telemetry import metrics

# Start times of the runs in progress in this process (at most the worker's concurrency, each popped at its end).
_started: dict[str, float] = {}
_lock = threading.Lock()


def task_label(name: str) -> str:
    """The platform's own tasks by name; anything else (a task sent by a stranger to the broker) as ``_other``."""
    return name if name.startswith(("mcp_platform.", "tenants.")) else metrics.OTHER


def _task_started(task_id: str = "", **kwargs: Any) -> None:
    with _lock:
        _started[task_id] = time.perf_counter()


def _task_finished(task_id: str = "", task: Any = None, state: str | None = None, **kwargs: Any) -> None:
    with _lock:
        started = _started.pop(task_id, None)
    name = task_label(str(getattr(task, "name", "")))
    metrics.CELERY_TASKS.labels(name, state or "UNKNOWN").inc()
    if started is not None:
        metrics.CELERY_TASK_DURATION.labels(name).observe(time.perf_counter() - started)


def celery_metrics_connect() -> None:
    task_prerun.connect(_task_started, weak=False, dispatch_uid="mcp_platform.telemetry.task_started")
    task_postrun.connect(_task_finished, weak=False, dispatch_uid="mcp_platform.telemetry.task_finished")
