"""The sweep that keeps runs moving without the broker's help: a start no worker claimed within a lease is queued
again (same start), one whose lease lapsed is started anew (next generation; the old start can neither renew nor
finish), a run whose message could not be sent is queued at the next sweep, and one that took its worker down
too often fails; and, without the sweep, a start a worker shutting down hands over is queued anew at once. Also:
whose allowance of unfinished tasks an anonymous caller uses."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from kombu.exceptions import OperationalError

from mcp_core.tasks import TaskEvent, TaskLimitExceeded, TaskOutcome, TaskRequest
from mcp_platform.celery import app as celery_app
from mcp_platform.jobs import queue, services
from mcp_platform.jobs.models import ToolRun
from mcp_platform.jobs.selectors import Caller
from mcp_platform.jobs.services import MAX_TAKEOVERS, Claim

pytestmark = pytest.mark.django_db

LEASE = timedelta(seconds=30)


def broker_takes(sent: list[tuple[str, int]]) -> Any:
    """A broker that takes every message: the starts sent to it are appended to ``sent``, (run, generation)."""

    def send_task(name: str, args: tuple[Any, ...] = (), **options: Any) -> None:
        assert name == queue.TOOL_RUN_EXECUTE
        _tenant_id, run_id, generation = args
        sent.append((run_id, generation))

    return send_task


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The starts sent to the broker, (run, generation), in order."""
    sent: list[tuple[str, int]] = []
    monkeypatch.setattr(celery_app, "send_task", broker_takes(sent))
    return sent


def create(caller: Caller, capture: Any) -> ToolRun:
    with capture(execute=True):
        return services.tool_run_create(
            caller=caller, request=TaskRequest(tool="job", arguments={}, client_capabilities={})
        )


def sweep(capture: Any) -> int:
    with capture(execute=True):
        return services.tool_runs_resume_stalled()


def age(run: ToolRun, **fields: Any) -> None:
    ToolRun.objects.filter(pk=run.pk).update(**fields)


def claim(run: ToolRun, generation: int) -> ToolRun | Claim:
    return services.tool_run_claim(tenant_id=run.tenant_id, run_id=run.pk, generation=generation)


def test_a_start_is_claimed_once_even_after_its_lease_lapsed(
    alice: Caller, queued: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = create(alice, django_capture_on_commit_callbacks)

    first = claim(run, 1)
    age(run, lease_until=timezone.now() - timedelta(seconds=1))

    assert isinstance(first, ToolRun) and first.attempts == 1
    assert claim(run, 1) is Claim.BUSY


def test_a_run_whose_lease_lapsed_is_started_anew_and_the_old_start_is_stopped(
    alice: Caller, queued: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = create(alice, django_capture_on_commit_callbacks)
    claim(run, 1)
    live = sweep(django_capture_on_commit_callbacks)
    age(run, lease_until=timezone.now() - timedelta(seconds=1))

    taken_over = sweep(django_capture_on_commit_callbacks)

    run.refresh_from_db()
    assert (live, taken_over) == (0, 1)
    assert (run.generation, run.takeovers, run.lease_until, run.status) == (2, 1, None, "working")
    assert "worker running it stopped" in run.status_message
    assert queued == [(run.pk, 1), (run.pk, 2)]
    assert not services.tool_run_renew(tenant_id=run.tenant_id, run_id=run.pk, generation=1)
    done = TaskOutcome(TaskEvent.COMPLETE, result={"content": []})
    assert services.tool_run_finish(tenant_id=run.tenant_id, run_id=run.pk, generation=1, outcome=done) is None
    assert claim(run, 1) is Claim.STALE
    assert isinstance(claim(run, 2), ToolRun)


def test_a_start_handed_over_by_a_worker_shutting_down_is_queued_anew_at_once_and_counts_as_no_takeover(
    alice: Caller, queued: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = create(alice, django_capture_on_commit_callbacks)
    claim(run, 1)

    with django_capture_on_commit_callbacks(execute=True):
        handed = services.tool_run_hand_over(tenant_id=run.tenant_id, run_id=run.pk, generation=1)
    with django_capture_on_commit_callbacks(execute=True):
        again = services.tool_run_hand_over(tenant_id=run.tenant_id, run_id=run.pk, generation=1)

    run.refresh_from_db()
    assert (handed, again) == (True, False)
    assert (run.generation, run.takeovers, run.lease_until, run.status) == (2, 0, None, "working")
    assert "worker running it shut down" in run.status_message
    # Queued at once, not at the next sweep; the old start can neither renew nor finish.
    assert queued == [(run.pk, 1), (run.pk, 2)]
    assert not services.tool_run_renew(tenant_id=run.tenant_id, run_id=run.pk, generation=1)
    done = TaskOutcome(TaskEvent.COMPLETE, result={"content": []})
    assert services.tool_run_finish(tenant_id=run.tenant_id, run_id=run.pk, generation=1, outcome=done) is None
    assert isinstance(claim(run, 2), ToolRun)


def test_a_start_no_worker_claimed_within_a_lease_is_queued_again_as_the_same_start(
    alice: Caller, queued: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = create(alice, django_capture_on_commit_callbacks)
    fresh = sweep(django_capture_on_commit_callbacks)
    age(run, scheduled_at=timezone.now() - LEASE - timedelta(seconds=1))

    lost = sweep(django_capture_on_commit_callbacks)
    again = sweep(django_capture_on_commit_callbacks)

    run.refresh_from_db()
    assert (fresh, lost, again) == (0, 1, 0)
    assert queued == [(run.pk, 1), (run.pk, 1)]
    assert (run.generation, run.takeovers) == (1, 0)
    assert isinstance(claim(run, 1), ToolRun)
    assert claim(run, 1) is Claim.BUSY


def test_a_run_the_broker_could_not_take_is_created_and_queued_by_the_next_sweep(
    alice: Caller, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    def broker_down(*args: Any, **options: Any) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(celery_app, "send_task", broker_down)
    run = create(alice, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    unqueued = run.scheduled_at

    sent: list[tuple[str, int]] = []
    monkeypatch.setattr(celery_app, "send_task", broker_takes(sent))
    swept = sweep(django_capture_on_commit_callbacks)

    run.refresh_from_db()
    assert (run.status, unqueued, swept, sent) == ("working", None, 1, [(run.pk, 1)])
    assert run.scheduled_at is not None


def test_a_run_that_keeps_losing_its_worker_fails_after_so_many_takeovers(
    alice: Caller, queued: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = create(alice, django_capture_on_commit_callbacks)
    for generation in range(1, MAX_TAKEOVERS + 2):
        claim(run, generation)
        age(run, lease_until=timezone.now() - timedelta(seconds=1))
        sweep(django_capture_on_commit_callbacks)

    run.refresh_from_db()
    assert (run.status, run.takeovers, run.error["code"]) == ("failed", MAX_TAKEOVERS, -32603)
    assert f"stopped {MAX_TAKEOVERS + 1} times" in run.error["message"]
    assert len(queued) == MAX_TAKEOVERS + 1


def test_finished_expired_and_waiting_runs_are_left_alone(
    alice: Caller, queued: Any, django_capture_on_commit_callbacks: Any
) -> None:
    long_ago = timezone.now() - timedelta(hours=1)
    finished, expired, waiting = (create(alice, django_capture_on_commit_callbacks) for _ in range(3))
    services.tool_run_cancel(caller=alice, task_id=finished.pk)
    age(expired, expires_at=timezone.now() - timedelta(seconds=1))
    age(waiting, status=ToolRun.Status.INPUT_REQUIRED)
    ToolRun.objects.update(scheduled_at=long_ago, lease_until=None)

    assert sweep(django_capture_on_commit_callbacks) == 0


# ---- whose allowance -------------------------------------------------------------------------------------


def anonymous(tenant: Any, address: str, session: str = "") -> Caller:
    version = "2025-11-25" if session else "2026-07-28"
    return Caller(tenant.pk, "anonymous", session, version, client_address=address)


def test_anonymous_callers_each_have_their_own_allowance_and_the_tenant_cap_holds(
    tenant: Any, settings: Any, queued: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.MCP_PLATFORM = {
        **settings.MCP_PLATFORM,
        "TASK_MAX_ACTIVE_PER_PRINCIPAL": 2,
        "TASK_MAX_ACTIVE_PER_TENANT": 5,
    }
    greedy, modest = anonymous(tenant, "203.0.113.7"), anonymous(tenant, "198.51.100.9")
    for _ in range(2):
        create(greedy, django_capture_on_commit_callbacks)

    with pytest.raises(TaskLimitExceeded, match="per caller"):
        create(greedy, django_capture_on_commit_callbacks)
    create(modest, django_capture_on_commit_callbacks)
    create(anonymous(tenant, "198.51.100.10"), django_capture_on_commit_callbacks)
    create(anonymous(tenant, "198.51.100.11"), django_capture_on_commit_callbacks)
    with pytest.raises(TaskLimitExceeded, match="on this server"):
        create(anonymous(tenant, "198.51.100.12"), django_capture_on_commit_callbacks)


def test_whose_allowance_a_caller_uses() -> None:
    assert Caller(1, "user:1 client:2", "", "2026-07-28", "203.0.113.7").quota_key == "user:1 client:2"
    assert Caller(1, "anonymous", "", "2026-07-28", "203.0.113.7").quota_key == "anonymous address:203.0.113.7"
    assert Caller(1, "anonymous", "s-1", "2025-11-25", "unknown").quota_key == "anonymous session:s-1"
