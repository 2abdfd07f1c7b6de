"""Celery tasks of the jobs room: run a tool run's call, purge expired runs. Thin: the work lives in
``execution`` and ``services``; the bodies only carry it onto the process's event loop."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from celery import Task, shared_task

from mcp_platform.conf import platform_settings
from mcp_platform.jobs import execution, services
from mcp_platform.jobs.loop import run_on_process_loop
from mcp_platform.jobs.services import Claim


@shared_task(bind=True, acks_late=True, ignore_result=True, max_retries=None)
def tool_run_execute(self: Task, tenant_id: int, run_id: str, generation: int) -> None:
    """Run one start of a tool run. Idempotent: a redelivered or stale message finds nothing to do, and one that
    arrives while another worker's lease is live comes back once that lease may have lapsed."""
    refused = run_on_process_loop(execution.tool_run_execute(tenant_id=tenant_id, run_id=run_id, generation=generation))
    if refused is Claim.BUSY:
        raise self.retry(countdown=platform_settings.TASK_LEASE_SECONDS)


@shared_task(acks_late=True, ignore_result=True)
def tool_runs_purge_expired() -> int:
    """Delete runs past their lifetime and stop the workers still running them (on the process loop, so the stop
    signal travels on this process's channel layer)."""
    return run_on_process_loop(sync_to_async(services.tool_runs_purge_expired)())
