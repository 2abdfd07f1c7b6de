"""A worker's start of a tool run: the call runs with the task's answers, questions park the run, answers replay
it, cancellation reaches the running call (by signal, or by the lease renewal when a signal is lost), and the
call's progress and logs travel as each era wants."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from mcp_core.context import ToolContext
from mcp_core.errors import InternalError, ToolError
from mcp_core.tasks import TaskRequest
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import Inbox
from mcp_platform.jobs import execution, services
from mcp_platform.jobs.models import ToolRun
from mcp_platform.jobs.selectors import Caller
from mcp_platform.jobs.services import Claim
from tenants.backends.registry import python_tool
from tenants.models import Backend
from tests.factories import TenantFactory, ToolFactory

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

DEADLINE = 10.0
CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}
# Per-test events the tools below wait on (asyncio events belong to one loop: made by each test).
events: dict[str, asyncio.Event] = {}


@python_tool("tests.jobs.waits")
async def waits(ctx: ToolContext) -> str:
    events["started"].set()
    try:
        await events["release"].wait()
    except asyncio.CancelledError:
        events["stopped"].set()
        raise
    return "released"


@python_tool("tests.jobs.asks")
async def asks(ctx: ToolContext, filename: str) -> str:
    answer = await ctx.elicit(f"Delete {filename}?", CONFIRM)
    return f"deleted {filename}" if answer["content"].get("confirm") else f"kept {filename}"


@python_tool("tests.jobs.reports")
async def reports(ctx: ToolContext) -> str:
    await ctx.report_progress(1, 2, "half way")
    await ctx.log("info", "working on it")
    events["started"].set()
    await events["release"].wait()
    return "reported"


@python_tool("tests.jobs.reports_often")
async def reports_often(ctx: ToolContext) -> str:
    for step in range(1, 51):
        await ctx.report_progress(step, 50, f"step {step}")
    events["started"].set()
    await events["release"].wait()
    return "done"


@python_tool("tests.jobs.fails")
async def fails(ctx: ToolContext) -> str:
    raise ToolError("no luck")


@python_tool("tests.jobs.breaks")
async def breaks(ctx: ToolContext) -> str:
    raise InternalError("broken at the protocol level")


@pytest.fixture(autouse=True)
def fresh_events() -> None:
    events.clear()
    events.update(started=asyncio.Event(), release=asyncio.Event(), stopped=asyncio.Event())


@pytest.fixture
def tenant(transactional_db: None) -> Any:
    tenant = TenantFactory(slug="acme")
    for name in ("waits", "asks", "reports", "reports_often", "fails", "breaks"):
        ToolFactory(tenant=tenant, name=name, backend=Backend.PYTHON, config={"function": f"tests.jobs.{name}"})
    return tenant


def caller(tenant: Any, version: str = "2026-07-28") -> Caller:
    session = "" if version == "2026-07-28" else "session-1"
    return Caller(tenant_id=tenant.pk, principal="anonymous", session_id=session, protocol_version=version)


async def start(tenant: Any, tool: str, version: str = "2026-07-28", **fields: Any) -> ToolRun:
    request = TaskRequest(tool=tool, **{"client_capabilities": {"elicitation": {}}, **fields})
    return await sync_to_async(services.tool_run_create)(caller=caller(tenant, version), request=request)


async def execute(run: ToolRun, generation: int = 1) -> Claim | None:
    return await execution.tool_run_execute(tenant_id=run.tenant_id, run_id=run.pk, generation=generation)


async def stored(run: ToolRun) -> ToolRun:
    return await ToolRun.objects.aget(pk=run.pk)


async def test_a_question_the_client_cannot_take_fails_statelessly_and_is_an_error_result_before(tenant: Any) -> None:
    stateless = await start(tenant, "asks", arguments={"filename": "x"}, client_capabilities={})
    handshake = await start(tenant, "asks", "2025-11-25", arguments={"filename": "x"}, client_capabilities={})

    assert await execute(stateless) is None
    await execute(handshake)
    failed, completed = await stored(stateless), await stored(handshake)

    assert (failed.status, failed.error["code"], failed.lease_until, failed.attempts) == ("failed", -32021, None, 1)
    assert (completed.status, completed.result["isError"]) == ("completed", True)


async def test_questions_park_the_run_and_answers_replay_it(tenant: Any) -> None:
    run = await start(tenant, "asks", arguments={"filename": "a.txt"})
    await execute(run)
    parked = await stored(run)
    (key,) = parked.input_requests

    await sync_to_async(services.tool_run_provide_input)(
        caller=caller(tenant), task_id=run.pk, responses={key: {"action": "accept", "content": {"confirm": True}}}
    )
    await execute(run, generation=2)
    done = await stored(run)

    assert parked.status == "input_required"
    assert parked.input_requests[key]["params"]["message"] == "Delete a.txt?"
    assert (done.status, done.result["content"][0]["text"], done.attempts) == ("completed", "deleted a.txt", 2)


async def test_a_stale_generation_does_not_run_the_call_again(tenant: Any) -> None:
    run = await start(tenant, "fails", arguments={})
    await execute(run)

    assert await execute(run) is Claim.STALE
    assert (await stored(run)).attempts == 1


async def test_tool_errors_complete_and_protocol_errors_fail(tenant: Any) -> None:
    failing = await start(tenant, "fails", arguments={})
    breaking = await start(tenant, "breaks", arguments={})
    await execute(failing)
    await execute(breaking)
    completed, failed = await stored(failing), await stored(breaking)

    assert (completed.status, completed.result["isError"]) == ("completed", True)
    assert (failed.status, failed.error, failed.result) == (
        "failed",
        {"code": -32603, "message": "broken at the protocol level"},
        None,
    )


async def test_cancelling_a_task_stops_its_running_call(tenant: Any) -> None:
    run = await start(tenant, "waits", arguments={})
    worker = asyncio.create_task(execute(run))
    async with asyncio.timeout(DEADLINE):
        await events["started"].wait()
        await sync_to_async(services.tool_run_cancel)(caller=caller(tenant), task_id=run.pk)
        await events["stopped"].wait()
        await worker
    after = await stored(run)

    assert (after.status, after.result, after.error) == ("cancelled", None, None)


async def test_the_lease_renewal_stops_a_call_whose_cancel_signal_was_lost(tenant: Any, settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TASK_LEASE_SECONDS": 1}
    run = await start(tenant, "waits", arguments={})
    worker = asyncio.create_task(execute(run))
    async with asyncio.timeout(DEADLINE):
        await events["started"].wait()
        # Cancelled behind the services' back: no signal reaches the worker.
        await ToolRun.objects.filter(pk=run.pk).aupdate(status=ToolRun.Status.CANCELLED)
        await events["stopped"].wait()
        await worker

    assert (await stored(run)).result is None


async def test_stateless_progress_becomes_the_status_message(tenant: Any) -> None:
    run = await start(tenant, "reports", arguments={}, log_level="debug")
    worker = asyncio.create_task(execute(run))
    async with asyncio.timeout(DEADLINE):
        await events["started"].wait()
        during = await stored(run)
        events["release"].set()
        await worker

    assert during.status_message == "half way"
    assert (await stored(run)).result["content"][0]["text"] == "reported"


async def test_handshake_progress_and_logs_go_to_whoever_follows_the_task(tenant: Any) -> None:
    run = await start(tenant, "reports", "2025-11-25", arguments={}, log_level="info", progress_token="p-1")
    inbox = Inbox()
    await inbox.join(groups.task_group(tenant.pk, run.pk))
    try:
        worker = asyncio.create_task(execute(run))
        async with asyncio.timeout(DEADLINE):
            await events["started"].wait()
            heard = [await inbox.next(DEADLINE), await inbox.next(DEADLINE)]
            events["release"].set()
            await worker
    finally:
        await inbox.leave()

    assert [(m["kind"], m["method"]) for m in heard if m] == [
        ("notification", "notifications/progress"),
        ("notification", "notifications/message"),
    ]
    assert heard[0] is not None and heard[0]["params"]["progressToken"] == "p-1"


async def test_progress_is_kept_on_the_run_in_either_era(tenant: Any) -> None:
    for version in ("2026-07-28", "2025-11-25"):
        events.update(started=asyncio.Event(), release=asyncio.Event())
        run = await start(tenant, "reports", version, arguments={}, progress_token="p-1")
        worker = asyncio.create_task(execute(run))
        async with asyncio.timeout(DEADLINE):
            await events["started"].wait()
            during = await stored(run)
            events["release"].set()
            await worker

        assert (during.progress, during.progress_total, during.progress_message) == (1, 2, "half way"), version
        # Only the 2026-07-28 era makes progress the task's status message.
        assert during.status_message == ("half way" if version == "2026-07-28" else ""), version


async def test_a_burst_of_progress_costs_a_few_writes_and_the_last_report_lands(
    tenant: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[float | None] = []
    record = services.tool_run_record_progress
    loop, last_written = asyncio.get_running_loop(), asyncio.Event()

    def counted(**fields: Any) -> None:  # the real write, counted (it runs in a worker thread)
        record(**fields)
        writes.append(fields["progress"])
        if fields["progress"] == 50:
            loop.call_soon_threadsafe(last_written.set)

    monkeypatch.setattr(services, "tool_run_record_progress", counted)
    run = await start(tenant, "reports_often", "2025-11-25", arguments={})  # no progress token of the client's
    inbox = Inbox()
    await inbox.join(groups.task_group(tenant.pk, run.pk))
    try:
        worker = asyncio.create_task(execute(run))
        async with asyncio.timeout(DEADLINE):
            await events["started"].wait()
            await last_written.wait()  # while the call still runs: the throttle's later write
            during = await stored(run)
            events["release"].set()
            await worker
        relayed = []
        while (message := await inbox.next(0.2)) is not None:
            relayed.append(message.get("method"))
    finally:
        await inbox.leave()

    assert "notifications/progress" not in relayed  # the client asked for none
    assert writes[0] == 1 and writes[-1] == 50
    assert len(writes) <= 3, writes  # the first at once, the latest after the interval (and one more at worst)
    assert (during.progress, during.progress_message, during.status) == (50, "step 50", "working")
