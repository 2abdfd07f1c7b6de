"""Every write to tool runs: creation (within the limits), cancellation, the client's answers, the worker's claim,
lease and outcome, the sweep that queues again what no worker took up or finished, and the purge of expired runs.

Each write is one transaction that asks ``mcp_core.tasks`` for the transition and changes the row only if it is
still in the status the transition started from. Listeners (requests waiting on the task, the worker running it)
hear about it on the channel layer after commit, and workers get a Celery message after commit; neither is the
truth. The row is: a lost message or a dead worker costs time, found by the sweep, never the run.
"""

from __future__ import annotations

import enum
import logging
import secrets
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from mcp_core.content import error_result
from mcp_core.errors import InternalError, InvalidParams, error_to_wire
from mcp_core.tasks import (
    TERMINAL,
    TaskEvent,
    TaskLimitExceeded,
    TaskOutcome,
    TaskRequest,
    TaskStatus,
    accept_responses,
    next_status,
)
from mcp_core.text import json_storable
from mcp_infra.conf import platform_settings
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import send_to_group
from mcp_platform.jobs import queue, selectors
from mcp_platform.jobs.models import RunOrigin, ToolRun
from mcp_platform.jobs.selectors import Caller
from mcp_platform.jobs.signals import tool_run_ended
from tenants.models import Tenant

logger = logging.getLogger(__name__)
JSONObject = dict[str, Any]


def new_task_id() -> str:
    """192 random bits, URL-safe: a task id is a bearer of the task for anyone with the caller's credentials."""
    return secrets.token_urlsafe(24)


# ---- telling listeners ------------------------------------------------------------------------------------


def _send(group: str, message: JSONObject) -> None:
    try:
        async_to_sync(send_to_group)(group, message)
    except Exception:
        # A lost nudge costs a waiter one polling interval; it must never undo the write.
        logger.exception("could not publish %s to %s", message.get("kind"), group)


def _announce(run: ToolRun, *, stop: bool = False) -> None:
    """After commit: waiters re-read the task; with ``stop`` the worker running it stops too."""
    tenant_id, task_id = run.tenant_id, run.pk
    transaction.on_commit(lambda: _send(groups.task_group(tenant_id, task_id), {"kind": "status"}))
    if stop:
        transaction.on_commit(lambda: _send(groups.task_control_group(tenant_id, task_id), {"kind": "cancel"}))


def _publish(tenant_id: int, run_id: str, generation: int) -> None:
    """Send the Celery message of one start. A broker that cannot take it (down, restarting) costs no error: the
    start is marked unqueued and the sweep sends it once the broker is back."""
    try:
        queue.enqueue(queue.TOOL_RUN_EXECUTE, tenant_id, run_id, generation)
    except Exception:
        logger.exception("could not queue tool run %s (start %s); the sweep queues it again", run_id, generation)
        _this_start(tenant_id, run_id, generation).filter(lease_until=None).update(scheduled_at=None)


def _schedule(run: ToolRun) -> None:
    """After commit, queue the run's current start for a worker."""
    tenant_id, run_id, generation = run.tenant_id, run.pk, run.generation
    transaction.on_commit(lambda: _publish(tenant_id, run_id, generation))


def _transition(run: ToolRun, event: TaskEvent, **fields: Any) -> None:
    """Apply ``event`` to a locked run and save. Raises TaskStateError when its status does not allow it.

    A run that reaches a terminal status gets its ``finished_at``, and ``tool_run_ended`` is sent after commit
    (the activity log records the call then, with the run's whole duration)."""
    status = next_status(TaskStatus(run.status), event)
    run.status = status.value
    if status in TERMINAL:
        fields["finished_at"] = timezone.now()
        transaction.on_commit(lambda: tool_run_ended.send(sender=ToolRun, run=run))
    for name, value in fields.items():
        setattr(run, name, value)
    run.save(update_fields=["status", "updated_at", *fields])


def _locked(caller: Caller, task_id: str) -> ToolRun | None:
    return selectors.tool_run_by_id(selectors.tool_runs_visible(caller=caller).select_for_update(), task_id).first()


# ---- the client's side ------------------------------------------------------------------------------------


def tool_run_create(*, caller: Caller, request: TaskRequest, origin: RunOrigin | None = None) -> ToolRun:
    """Store a working run and schedule it on a worker after commit; ``origin`` is the request that started it.

    The lifetime is what the client asked for, capped at ``TASK_MAX_TTL_MS`` (``TASK_DEFAULT_TTL_MS`` when it
    asked for nothing). Raises TaskLimitExceeded when the caller (``Caller.quota_key``: the principal, or an
    anonymous client) or the tenant already has as many unfinished runs as it may, and InvalidParams when the call
    holds text a JSON column cannot store (U+0000).
    """
    if not json_storable([request.tool, request.arguments, request.client_capabilities, request.progress_token]):
        raise InvalidParams("A task's arguments must not contain U+0000")
    ttl_ms = min(request.ttl_ms or platform_settings.TASK_DEFAULT_TTL_MS, platform_settings.TASK_MAX_TTL_MS)
    per_principal = platform_settings.TASK_MAX_ACTIVE_PER_PRINCIPAL
    per_tenant = platform_settings.TASK_MAX_ACTIVE_PER_TENANT
    with transaction.atomic():
        # Serialises the count and the insert of one tenant's runs, so the limits hold under concurrency.
        Tenant.objects.select_for_update().filter(pk=caller.tenant_id).first()
        caller_active, tenant_active = selectors.active_counts(tenant_id=caller.tenant_id, quota_key=caller.quota_key)
        if caller_active >= per_principal:
            raise TaskLimitExceeded(
                f"Too many unfinished tasks: at most {per_principal} per caller; wait for some or cancel them",
                data={"limit": per_principal, "scope": "principal"},
            )
        if tenant_active >= per_tenant:
            raise TaskLimitExceeded(
                f"Too many unfinished tasks on this server (at most {per_tenant}); try again later",
                data={"limit": per_tenant, "scope": "tenant"},
            )
        run = ToolRun.objects.create(
            id=new_task_id(),
            tenant_id=caller.tenant_id,
            principal=caller.principal,
            session_id=caller.session_id,
            quota_key=caller.quota_key,
            protocol_version=caller.protocol_version,
            tool_name=request.tool,
            arguments=request.arguments,
            client_capabilities=request.client_capabilities,
            log_level=request.log_level or "",
            progress_token=request.progress_token,
            input_answers={key: [a.question, a.result] for key, a in request.answers.items()},
            ttl_ms=ttl_ms,
            expires_at=timezone.now() + timedelta(milliseconds=ttl_ms),
            scheduled_at=timezone.now(),
            origin=(origin or RunOrigin())._asdict(),
        )
        _schedule(run)
    return run


def tool_run_cancel(
    *, caller: Caller, task_id: str, reason: str = "Cancelled by the client"
) -> tuple[ToolRun, bool] | None:
    """Cancel the caller's run unless it has finished; the worker running it is told to stop. The run afterwards
    and whether this call cancelled it; None when the caller has no such run. ``reason`` is its status message."""
    with transaction.atomic():
        run = _locked(caller, task_id)
        if run is None:
            return None
        if run.status in selectors.TERMINAL_STATUSES:
            return run, False
        _transition(run, TaskEvent.CANCEL, input_requests={}, lease_until=None, status_message=reason)
        _announce(run, stop=True)
    return run, True


def tool_run_provide_input(*, caller: Caller, task_id: str, responses: Any) -> ToolRun | None:
    """Record the client's answers to open questions (others are ignored). Once none is left open the run is
    working again and scheduled to replay with the answers. None when the caller has no such run.

    Raises InvalidParams for a malformed answer to an open question.
    """
    with transaction.atomic():
        run = _locked(caller, task_id)
        if run is None or run.status != ToolRun.Status.INPUT_REQUIRED:
            return run
        accepted = accept_responses(run.input_requests, responses)
        if not accepted:
            return run
        answers = {**run.input_answers, **{key: [a.question, a.result] for key, a in accepted.items()}}
        still_open = {key: q for key, q in run.input_requests.items() if key not in accepted}
        if still_open:
            run.input_answers, run.input_requests = answers, still_open
            run.save(update_fields=["input_answers", "input_requests", "updated_at"])
        else:
            _transition(
                run,
                TaskEvent.INPUT_PROVIDED,
                input_answers=answers,
                input_requests={},
                generation=run.generation + 1,
                scheduled_at=timezone.now(),
                status_message="",
            )
            _schedule(run)
        _announce(run)
    return run


def tool_run_fail_input(*, caller: Caller, task_id: str, message: str) -> None:
    """2025-11-25: the client could not answer; the call ends with an isError result, as it would inline."""
    with transaction.atomic():
        run = _locked(caller, task_id)
        if run is None or run.status != ToolRun.Status.INPUT_REQUIRED:
            return
        _transition(run, TaskEvent.COMPLETE, input_requests={}, result=error_result(message))
        _announce(run)


# ---- the worker's side ------------------------------------------------------------------------------------


class Claim(enum.Enum):
    # Nothing to do: the run is gone, finished, waiting for the client, or this message is for an older start.
    STALE = "stale"
    # A worker claimed this start already (a duplicate or redelivered message): it runs it, or, once its lease
    # lapses, the sweep starts the run anew.
    BUSY = "busy"
    # The tenant already has as many runs holding a lease as it may: the start stays queued, to be tried again.
    WAIT = "wait"


# How often a run is started anew after the worker running it stopped renewing its lease, before it fails: a
# call that takes its worker down every time must not take down every worker in turn.
MAX_TAKEOVERS = 3


def _lease() -> timedelta:
    return timedelta(seconds=platform_settings.TASK_LEASE_SECONDS)


def _this_start(tenant_id: int, run_id: str, generation: int) -> QuerySet[ToolRun]:
    """The run while start ``generation`` of it is working: what a worker's message may still act on."""
    return ToolRun.objects.filter(tenant_id=tenant_id, pk=run_id, generation=generation, status=ToolRun.Status.WORKING)


def _locked_start(tenant_id: int, run_id: str, generation: int) -> QuerySet[ToolRun]:
    # Locks the run only: the tenant row (joined for the claim) is what creation serialises on.
    return _this_start(tenant_id, run_id, generation).select_for_update(of=("self",))


def tool_run_claim(
    *, tenant_id: int, run_id: str, generation: int, running_limit: int | None = None
) -> ToolRun | Claim:
    """Take the lease on start ``generation`` of a working run. Each start is claimed once: a duplicate or
    redelivered message finds it claimed (a lapsed lease is the sweep's to act on, with a new start).

    With ``running_limit``, at most that many of the tenant's runs hold a lease at once (over all workers: a dead
    worker's lease lapses, and its run stops counting); past it the start stays queued (``Claim.WAIT``), its
    queueing time renewed so the sweep leaves it to the caller's next try."""
    with transaction.atomic():
        if running_limit is not None:
            # Serialises the count and the claim of one tenant's runs (creation takes the same lock first).
            Tenant.objects.select_for_update().filter(pk=tenant_id).first()
        run = _locked_start(tenant_id, run_id, generation).select_related("tenant").first()
        if run is None:
            return Claim.STALE
        now = timezone.now()
        if run.lease_until is not None:
            return Claim.BUSY
        if running_limit is not None:
            running = ToolRun.objects.filter(tenant_id=tenant_id, status=ToolRun.Status.WORKING, lease_until__gt=now)
            if running.count() >= running_limit:
                run.scheduled_at = now
                run.save(update_fields=["scheduled_at"])
                return Claim.WAIT
        run.lease_until = now + _lease()
        run.attempts += 1
        run.save(update_fields=["lease_until", "attempts", "updated_at"])
    return run


def tool_run_renew(*, tenant_id: int, run_id: str, generation: int) -> bool:
    """Extend the lease while the call runs; False once the run is no longer this start's to finish (cancelled,
    expired, purged), which tells the worker to stop."""
    now = timezone.now()
    unexpired = _this_start(tenant_id, run_id, generation).filter(expires_at__gt=now)
    return bool(unexpired.update(lease_until=now + _lease()))


def tool_run_record_progress(
    *,
    tenant_id: int,
    run_id: str,
    generation: int,
    progress: float | None,
    total: float | None,
    message: str,
    status_message: str | None,
) -> None:
    """Store the latest progress the running call reported (the worker throttles these: ``jobs.progress``). With
    ``status_message`` (the 2026-07-28 era, where progress is what the task says about itself) the task's status
    message changes too and whoever follows the task is told; otherwise it is one plain UPDATE that nobody waits on.
    """
    fields: dict[str, Any] = {"progress": progress, "progress_total": total, "progress_message": message[:1000]}
    if status_message is None:
        _this_start(tenant_id, run_id, generation).update(**fields)
        return
    with transaction.atomic():
        run = _locked_start(tenant_id, run_id, generation).first()
        if run is None:
            return
        for name, value in fields.items():
            setattr(run, name, value)
        run.status_message = status_message[:1000]
        run.save(update_fields=[*fields, "status_message", "updated_at"])
        _announce(run)


def tool_run_record_upstream_task(*, tenant_id: int, run_id: str, generation: int, upstream_task: JSONObject) -> bool:
    """Remember the upstream task this start follows (and the answers it sent there); False when the run stopped
    being this start's meanwhile, so the caller stops too."""
    return bool(
        _this_start(tenant_id, run_id, generation).update(upstream_task=upstream_task, updated_at=timezone.now())
    )


def tool_run_continues(*, tenant_id: int, run_id: str) -> bool:
    """Whether the run is still unfinished and unexpired, so a later start will carry on what a stopped one began
    (a worker shutting down), as opposed to a cancelled, expired or purged run."""
    unfinished = (ToolRun.Status.WORKING, ToolRun.Status.INPUT_REQUIRED)
    alive = ToolRun.objects.filter(tenant_id=tenant_id, pk=run_id, status__in=unfinished, expires_at__gt=timezone.now())
    return alive.exists()


def tool_run_hand_over(*, tenant_id: int, run_id: str, generation: int) -> bool:
    """A worker shutting down gives back the start it could not finish (its call already stopped): the next start is
    queued at once for another worker, so the run waits for no lease to lapse and no sweep. Not a takeover (the
    call did not take its worker down), so it counts against no limit. False when the start was no longer this
    worker's (cancelled, expired, taken over meanwhile)."""
    with transaction.atomic():
        run = _locked_start(tenant_id, run_id, generation).first()
        if run is None:
            return False
        # Still working: a new start of the same call, not a transition.
        run.generation += 1
        run.lease_until, run.scheduled_at = None, timezone.now()
        run.status_message = "Started again: the worker running it shut down"
        run.save(update_fields=["generation", "lease_until", "scheduled_at", "status_message", "updated_at"])
        _schedule(run)
        _announce(run)
    return True


def tool_run_finish(*, tenant_id: int, run_id: str, generation: int, outcome: TaskOutcome) -> ToolRun | None:
    """Store what the run came to: its result, its JSON-RPC error, or its open questions. Discarded (None) when the
    run stopped being this start's meanwhile (cancelled, expired)."""
    with transaction.atomic():
        run = _locked_start(tenant_id, run_id, generation).first()
        if run is None:
            return None
        fields: dict[str, Any] = {"lease_until": None}
        if outcome.event is TaskEvent.NEEDS_INPUT:
            fields.update(input_requests=outcome.questions, status_message="Waiting for the client's answers")
        elif outcome.event is TaskEvent.COMPLETE:
            fields.update(result=outcome.result, status_message="")
        else:
            message = str((outcome.error or {}).get("message", "The call failed"))
            fields.update(error=outcome.error, status_message=message)
        _transition(run, outcome.event, **fields)
        _announce(run)
    return run


def _stalled(now: datetime) -> Q:
    """Working runs whose worker stopped renewing the lease, or whose start no worker claimed within a lease of
    being queued (its message lost with a restarted broker, or never sent)."""
    unclaimed = Q(lease_until=None) & (Q(scheduled_at=None) | Q(scheduled_at__lte=now - _lease()))
    return Q(status=ToolRun.Status.WORKING, expires_at__gt=now) & (Q(lease_until__lte=now) | unclaimed)


def _take_over(run: ToolRun, now: datetime) -> None:
    """Start a run anew whose worker is gone: the next generation, so the old worker (should it be alive after
    all) can neither renew nor finish its start; or fail it after ``MAX_TAKEOVERS``."""
    if run.takeovers >= MAX_TAKEOVERS:
        message = f"The worker running this task stopped {run.takeovers + 1} times; the task was given up"
        error = error_to_wire(InternalError(message))[1]
        _transition(run, TaskEvent.FAIL, lease_until=None, error=error, status_message=message)
    else:
        # Still working: a new start of the same call, not a transition.
        run.generation += 1
        run.takeovers += 1
        run.lease_until, run.scheduled_at = None, now
        run.status_message = "Started again: the worker running it stopped"
        run.save(
            update_fields=["generation", "takeovers", "lease_until", "scheduled_at", "status_message", "updated_at"]
        )
        _schedule(run)
    _announce(run)


def tool_runs_resume_stalled(*, limit: int = 500) -> int:
    """The sweep (Celery beat, every few seconds): queue again each start no worker claimed within a lease (the
    same start: whichever message comes first runs it, the other finds it claimed), and start anew each run whose
    lease lapsed. Rows another transaction holds are left to the next sweep. The number of runs acted on."""
    now = timezone.now()
    with transaction.atomic():
        runs = list(
            ToolRun.objects.select_for_update(skip_locked=True).filter(_stalled(now)).order_by("created_at")[:limit]
        )
        for run in runs:
            if run.lease_until is not None:
                _take_over(run, now)
            else:
                run.scheduled_at = now
                run.save(update_fields=["scheduled_at"])
                _schedule(run)
    return len(runs)


def tool_runs_purge_expired() -> int:
    """Delete runs past their lifetime; workers still running one are told to stop. The number deleted."""
    with transaction.atomic():
        expired = ToolRun.objects.select_for_update().filter(expires_at__lte=timezone.now())
        running = list(expired.exclude(status__in=selectors.TERMINAL_STATUSES).values_list("tenant_id", "pk"))
        deleted, _ = expired.delete()
        transaction.on_commit(lambda: _stop_all(running))
    return deleted


def _stop_all(runs: list[tuple[int, str]]) -> None:
    for tenant_id, task_id in runs:
        _send(groups.task_control_group(tenant_id, task_id), {"kind": "cancel"})
