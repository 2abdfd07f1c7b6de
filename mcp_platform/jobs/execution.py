"""One start of a tool run on a worker: claim it, run the call with the answers the task holds, keep the lease
while it runs, stop when the task is cancelled, and store what came of it; and, when the worker shuts down, the
hand-over of the starts it could not finish within ``DRAIN_SECONDS``.

The call runs through ``mcp_core.features.tools.run_task_call`` with the same ``ToolContext`` a call in the
request gets; only its ``Outbound`` differs. Questions to the client never wait here: the ledger answers the
ones the task has answers for, and the first open one ends the start (``input_required``); the task replays the
call once the client has answered (deterministic replay, as MRTR). Cancellation arrives on the task's control
group through the process mailbox; the lease renewal notices a lost signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
import logging
import threading
from typing import Any

from asgiref.sync import sync_to_async

from mcp_core.env import Env
from mcp_core.errors import ClientRequestFailed, error_to_wire
from mcp_core.features.tools import run_task_call
from mcp_core.mrtr import Answer, InputLedger
from mcp_core.tasks import TaskEvent, TaskOutcome
from mcp_core.versions import STATELESS_VERSIONS
from mcp_infra.conf import platform_settings
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import mailbox, send_to_group
from mcp_platform.jobs import capacity, services
from mcp_platform.jobs.loop import process_loop
from mcp_platform.jobs.models import ToolRun
from mcp_platform.jobs.progress import ProgressRecorder
from mcp_platform.jobs.services import Claim
from tenants.catalog import TenantCatalog
from tenants.connections.acting import Caller
from tenants.federation.remote_tasks import running_task
from tenants.identity import server_identity

logger = logging.getLogger(__name__)
JSONObject = dict[str, Any]

PROGRESS = "notifications/progress"


class Stopped(enum.Enum):
    """A start whose call did not come to an outcome."""

    # Cancelled, expired, purged or taken over: not this start's to finish, nothing to store.
    GIVEN_UP = "given up"
    # This worker shuts down: the run starts anew on another worker.
    HANDED_OVER = "handed over"


# The calls of this worker's starts (routing, not state: the run's row is the truth), and those being handed over.
_calls: set[asyncio.Task[TaskOutcome]] = set()
_handing_over: set[asyncio.Task[TaskOutcome]] = set()
_shutting_down = threading.Event()


class TaskOutbound:
    """``mcp_core.context.Outbound`` of a running task. Progress is kept on the run (``jobs.progress``); in
    2026-07-28 it is also the task's status message (the extension sends no progress or log messages for tasks).
    2025-11-25: progress and log messages go to the task's group, where a ``tasks/result`` stream relays them."""

    def __init__(self, run: ToolRun) -> None:
        self._run = run
        self._stateless = run.protocol_version in STATELESS_VERSIONS
        self.progress = ProgressRecorder(run, as_status=self._stateless)

    async def notify(self, method: str, params: JSONObject) -> None:
        run = self._run
        if method == PROGRESS:
            await self.progress.report(params)
            # Without a token of the client's the progress is the run's alone (see task_env).
            if run.progress_token is None:
                return
        if self._stateless:
            return
        message = {"kind": "notification", "method": method, "params": params}
        await send_to_group(groups.task_group(run.tenant_id, run.pk), message)

    async def request(self, method: str, params: JSONObject) -> JSONObject:
        """Never reached: a task's questions are answered by its ledger or left open for the client."""
        raise ClientRequestFailed(f"{method} cannot be sent to the client from a worker")

    async def release(self) -> None:
        """There is no client connection to release."""


def task_env(run: ToolRun, outbound: TaskOutbound | None = None) -> Env:
    """What the call sees on the worker: the request's version, capabilities and log level, and the answers."""
    # Progress is kept on the run (and, in 2026-07-28, becomes the status message) whether or not the request
    # asked for it; it reaches the client only under the client's own token.
    token = run.pk if run.progress_token is None else run.progress_token
    answers = {key: Answer(question, result) for key, (question, result) in run.input_answers.items()}
    return Env(
        version=run.protocol_version,
        catalog=TenantCatalog(run.tenant),
        outbound=outbound or TaskOutbound(run),
        server=server_identity(run.tenant),
        client_capabilities=run.client_capabilities,
        log_level=run.log_level or None,
        page_size=platform_settings.PAGE_SIZE,
        meta={} if token is None else {"progressToken": token},
        ledger=InputLedger(answers=answers),
        # The person who started the task, whose credentials are looked up as it runs (a revoked one stops it).
        caller=Caller.from_label(run.principal, base_url=str(run.origin.get("base_url") or "")),
    )


class RunningTask:
    """``tenants.federation.remote_tasks.TaskRun`` of this start: what an upstream call followed as the upstream's
    own task keeps on the run, so the next start (or another worker's) follows the same upstream task."""

    def __init__(self, run: ToolRun) -> None:
        self._run = run
        self.upstream_task: JSONObject | None = run.upstream_task

    async def record(self, upstream_task: JSONObject) -> bool:
        run = self._run
        self.upstream_task = upstream_task
        return await sync_to_async(services.tool_run_record_upstream_task)(
            tenant_id=run.tenant_id, run_id=run.pk, generation=run.generation, upstream_task=upstream_task
        )

    async def continues(self) -> bool:
        return await sync_to_async(services.tool_run_continues)(tenant_id=self._run.tenant_id, run_id=self._run.pk)


async def _keep_lease(run: ToolRun, work: asyncio.Task[TaskOutcome]) -> None:
    """Renew the lease now and then; stop the call once the run is no longer ours to finish."""
    interval = platform_settings.TASK_LEASE_SECONDS / 3
    while True:
        renewed = await sync_to_async(services.tool_run_renew)(
            tenant_id=run.tenant_id, run_id=run.pk, generation=run.generation
        )
        if not renewed:
            work.cancel()
            return
        await asyncio.sleep(interval)


async def _run_call(run: ToolRun) -> TaskOutcome | Stopped:
    """The outcome of the call, or how it was stopped."""
    outbound = TaskOutbound(run)
    context = contextvars.copy_context()
    context.run(running_task.set, RunningTask(run))
    work = asyncio.create_task(run_task_call(run.tool_name, run.arguments, task_env(run, outbound)), context=context)
    _calls.add(work)
    control = groups.task_control_group(run.tenant_id, run.pk)

    def stop(message: JSONObject) -> None:
        if message.get("kind") == "cancel":
            work.cancel()

    box = mailbox()
    await box.subscribe(control, stop)
    # Subscribed first: a cancellation from now on is heard, one from before is seen by the first renewal.
    keeper = asyncio.create_task(_keep_lease(run, work))
    try:
        await asyncio.wait({work})
    except asyncio.CancelledError:
        work.cancel()
        raise
    finally:
        _calls.discard(work)
        keeper.cancel()
        outbound.progress.close()
        with contextlib.suppress(Exception):
            await asyncio.shield(box.unsubscribe(control, stop))
    handed_over = work in _handing_over
    _handing_over.discard(work)
    if work.cancelled():
        return Stopped.HANDED_OVER if handed_over else Stopped.GIVEN_UP
    # The last progress the call reported, should the throttle still hold it.
    await outbound.progress.settle()
    failure = work.exception()
    if failure is not None:
        logger.error("tool run %s (%s) failed", run.pk, run.tool_name, exc_info=failure)
        return TaskOutcome(TaskEvent.FAIL, error=error_to_wire(failure)[1])
    return work.result()


async def tool_run_execute(*, tenant_id: int, run_id: str, generation: int) -> Claim | None:
    """Run start ``generation`` of the run and store its outcome; the refusal when it is not ours to run
    (``Claim.STALE``, ``Claim.BUSY``: nothing to do; ``Claim.WAIT``: the tenant runs as many as it may, try again)."""
    claimed = await sync_to_async(services.tool_run_claim)(
        tenant_id=tenant_id, run_id=run_id, generation=generation, running_limit=capacity.running_limit()
    )
    if isinstance(claimed, Claim):
        return claimed
    outcome = await _run_call(claimed)
    if outcome is Stopped.HANDED_OVER:
        handed = await sync_to_async(services.tool_run_hand_over)(
            tenant_id=tenant_id, run_id=run_id, generation=generation
        )
        if handed:
            logger.info("tool run %s (start %s) handed over: this worker shuts down", run_id, generation)
    elif isinstance(outcome, TaskOutcome):
        await sync_to_async(services.tool_run_finish)(
            tenant_id=tenant_id, run_id=run_id, generation=generation, outcome=outcome
        )
    return None


async def calls_hand_over() -> int:
    """Stop every call this worker runs; each start is then handed over (``tool_run_execute``). How many."""
    stopped = 0
    for work in list(_calls):
        _handing_over.add(work)
        stopped += work.cancel()
    return stopped


def hand_over_after_drain(sender: Any = None, how: str = "Warm", **kwargs: Any) -> None:
    """Celery's ``worker_shutting_down`` receiver, called in the worker's signal handler (so it only starts a timer).

    On SIGTERM Celery's warm shutdown takes no new task and waits for the running ones; the calls still running
    ``DRAIN_SECONDS`` later are stopped and their starts handed over to another worker. A cold shutdown (SIGQUIT)
    starts the hand-over at once (Celery does not wait for it: what it leaves is taken over when the lease lapses)."""
    if _shutting_down.is_set():
        return
    _shutting_down.set()
    grace = 0.0 if how == "Cold" else float(platform_settings.DRAIN_SECONDS)
    timer = threading.Timer(grace, _hand_over_now)
    timer.daemon = True
    timer.start()


def _hand_over_now() -> None:
    if _calls:
        asyncio.run_coroutine_threadsafe(calls_hand_over(), process_loop())
