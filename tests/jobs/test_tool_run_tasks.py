"""The Celery task bodies, called as a worker thread calls them: the run's coroutine goes to the process's event
loop and the thread waits for it; a duplicate or stale message does nothing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from mcp_core.tasks import TaskRequest
from mcp_platform.jobs import services
from mcp_platform.jobs.loop import use_loop
from mcp_platform.jobs.models import ToolRun
from mcp_platform.jobs.selectors import Caller
from mcp_platform.jobs.tasks import tool_run_execute, tool_runs_purge_expired, tool_runs_resume_stalled
from tenants.models import Backend
from tests.factories import TenantFactory, ToolFactory

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 10.0


async def _cancel_the_rest() -> None:
    rest = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


@pytest.fixture(autouse=True)
def worker_loop() -> Iterator[None]:
    """The process loop of a worker, for one test: its mailbox ends with it. A loop left running would keep
    receiving on the channel layer, and channels-redis refuses every later test's receive on another loop."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-jobs-event-loop", daemon=True)
    thread.start()
    use_loop(loop)
    yield
    asyncio.run_coroutine_threadsafe(_cancel_the_rest(), loop).result(DEADLINE)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(DEADLINE)
    loop.close()


@pytest.fixture
def run() -> ToolRun:
    tenant = TenantFactory(slug="acme")
    ToolFactory(tenant=tenant, name="greet", backend=Backend.PYTHON, config={"function": "conformance.greet"})
    caller = Caller(tenant_id=tenant.pk, principal="anonymous", session_id="", protocol_version="2026-07-28")
    request = TaskRequest(tool="greet", arguments={"name": "Ada"}, client_capabilities={})
    return services.tool_run_create(caller=caller, request=request)


def test_a_message_runs_the_call_to_its_result(run: ToolRun) -> None:
    tool_run_execute.run(run.tenant_id, run.pk, run.generation)

    run.refresh_from_db()
    assert (run.status, run.result["content"][0]["text"], run.attempts) == ("completed", "Hello, Ada!", 1)


def test_a_duplicate_message_and_a_stale_one_do_nothing(run: ToolRun) -> None:
    services.tool_run_claim(tenant_id=run.tenant_id, run_id=run.pk, generation=run.generation)

    tool_run_execute.run(run.tenant_id, run.pk, run.generation)
    tool_run_execute.run(run.tenant_id, run.pk, run.generation + 1)

    run.refresh_from_db()
    assert (run.status, run.attempts) == ("working", 1)


def test_the_sweep_task_starts_anew_a_run_whose_worker_stopped(run: ToolRun) -> None:
    services.tool_run_claim(tenant_id=run.tenant_id, run_id=run.pk, generation=run.generation)
    ToolRun.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))

    assert tool_runs_resume_stalled.run() == 1
    tool_run_execute.run(run.tenant_id, run.pk, run.generation + 1)

    run.refresh_from_db()
    assert (run.status, run.generation, run.result["content"][0]["text"]) == ("completed", 2, "Hello, Ada!")


def test_the_purge_task_deletes_what_expired(run: ToolRun) -> None:
    ToolRun.objects.filter(pk=run.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert tool_runs_purge_expired.run() == 1
    assert not ToolRun.objects.exists()
