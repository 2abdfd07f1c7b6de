"""How many of one tenant's tool runs may run at once, over all workers: ``TASK_MAX_RUNNING_PER_TENANT``, or half
the concurrency of the worker that claims a start (at least 1), so that one tenant never holds every worker thread.
"""

from __future__ import annotations

from typing import Any

from mcp_infra.conf import platform_settings

# How soon a start that found its tenant at the limit is tried again (seconds). The start stays queued meanwhile
# (the run is still working): a later try, the sweep, or another worker runs it once a slot is free.
WAIT_RETRY_SECONDS = 1.0

# This worker process's concurrency, as Celery's ``worker_init`` reports it (None outside a worker: the default).
_worker_concurrency: int | None = None


def remember_worker_concurrency(sender: Any, **kwargs: Any) -> None:
    """Celery's ``worker_init`` receiver: note how many runs this worker runs at once."""
    global _worker_concurrency
    concurrency = getattr(sender, "concurrency", None)
    if isinstance(concurrency, int) and concurrency > 0:
        _worker_concurrency = concurrency


def running_limit() -> int:
    """How many of a tenant's runs may hold a lease at once when this worker claims one."""
    configured = platform_settings.TASK_MAX_RUNNING_PER_TENANT
    if configured > 0:
        return int(configured)
    return max(1, (_worker_concurrency or 2) // 2)
