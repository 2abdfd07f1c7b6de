"""Celery tasks of the jobs room: run a tool run's call, sweep up stalled runs, purge expired runs. Thin: the work
lives in ``execution`` and ``services``; the bodies only carry it onto the process's event loop."""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from celery import shared_task

from mcp_platform.jobs import capacity, execution, queue, services
from mcp_platform.jobs.loop import run_on_process_loop

logger = logging.getLogger(__name__)


@shared_task(name=queue.TOOL_RUN_EXECUTE, acks_late=True, ignore_result=True)
def tool_run_execute(tenant_id: int, run_id: str, generation: int) -> None:
    """Run one start of a tool run. Idempotent: a duplicate, redelivered or stale message finds the start claimed
    or gone and does nothing (a start whose worker died is the sweep's to start anew). A start whose tenant runs
    as many as it may is queued again for a little later: it frees this worker thread for other tenants' runs."""
    refused = run_on_process_loop(execution.tool_run_execute(tenant_id=tenant_id, run_id=run_id, generation=generation))
    if refused is services.Claim.WAIT:
        try:
            queue.enqueue(queue.TOOL_RUN_EXECUTE, tenant_id, run_id, generation, countdown=capacity.WAIT_RETRY_SECONDS)
        except Exception:
            # The broker is away: the sweep queues the start again once a lease has passed since this try.
            logger.exception("could not queue tool run %s (start %s) again", run_id, generation)


@shared_task(name=queue.TOOL_RUNS_RESUME_STALLED, ignore_result=True)
def tool_runs_resume_stalled() -> int:
    """Queue again the starts no worker took up, and start anew the runs whose worker stopped renewing its lease
    (on the process loop, so waiters hear of it on this process's channel layer)."""
    return run_on_process_loop(sync_to_async(services.tool_runs_resume_stalled)())


@shared_task(name=queue.TOOL_RUNS_PURGE_EXPIRED, acks_late=True, ignore_result=True)
def tool_runs_purge_expired() -> int:
    """Delete runs past their lifetime and stop the workers still running them (on the process loop, so the stop
    signal travels on this process's channel layer)."""
    return run_on_process_loop(sync_to_async(services.tool_runs_purge_expired)())
