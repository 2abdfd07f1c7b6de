"""Tool-run services: limits and lifetimes at creation, who sees a run, the client's cancel and answers, the
worker's claim, lease and outcome, and the purge. Every write checks its transition against ``mcp_core.tasks``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from mcp_core.errors import InvalidParams
from mcp_core.mrtr import Answer
from mcp_core.tasks import TaskEvent, TaskLimitExceeded, TaskOutcome, TaskRequest
from mcp_platform.jobs import selectors, services
from mcp_platform.jobs.models import ToolRun
from mcp_platform.jobs.selectors import Caller
from mcp_platform.jobs.services import Claim
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

ELICIT = {"method": "elicitation/create", "params": {"message": "Sure?", "requestedSchema": {"type": "object"}}}
YES = {"action": "accept", "content": {"confirm": True}}


def request(tool: str = "job", **fields: Any) -> TaskRequest:
    return TaskRequest(tool=tool, arguments={"n": 1}, client_capabilities={"elicitation": {}}, **fields)


def create(caller: Caller, django_capture_on_commit_callbacks: Any, **fields: Any) -> ToolRun:
    with django_capture_on_commit_callbacks(execute=False):
        return services.tool_run_create(caller=caller, request=request(**fields))


def waiting(run: ToolRun, questions: dict[str, Any]) -> ToolRun:
    finished = services.tool_run_finish(
        tenant_id=run.tenant_id,
        run_id=run.pk,
        generation=run.generation,
        outcome=TaskOutcome(TaskEvent.NEEDS_INPUT, questions=questions),
    )
    assert finished is not None
    return finished


# ---- creation -------------------------------------------------------------------------------------------


def test_a_run_is_stored_working_with_an_unguessable_id_and_scheduled_after_commit(
    alice: Caller, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        run = services.tool_run_create(caller=alice, request=request(answers={"k": Answer("d", YES)}))

    assert run.status == "working" and run.generation == 1
    assert len(run.pk) >= 32
    assert run.input_answers == {"k": ["d", YES]}
    assert len(callbacks) == 1  # the Celery message, sent once the row is committed


def test_the_lifetime_is_the_default_and_a_request_is_capped_at_the_maximum(
    alice: Caller, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TASK_DEFAULT_TTL_MS": 60_000, "TASK_MAX_TTL_MS": 120_000}

    default = create(alice, django_capture_on_commit_callbacks)
    asked = create(alice, django_capture_on_commit_callbacks, ttl_ms=90_000)
    capped = create(alice, django_capture_on_commit_callbacks, ttl_ms=10**9)

    assert (default.ttl_ms, asked.ttl_ms, capped.ttl_ms) == (60_000, 90_000, 120_000)
    assert capped.expires_at - capped.created_at <= timedelta(milliseconds=120_001)


def test_a_principal_may_have_only_so_many_unfinished_runs(
    tenant: Any, alice: Caller, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TASK_MAX_ACTIVE_PER_PRINCIPAL": 2}
    first = create(alice, django_capture_on_commit_callbacks)
    create(alice, django_capture_on_commit_callbacks)

    with pytest.raises(TaskLimitExceeded, match="at most 2 per caller") as refused:
        create(alice, django_capture_on_commit_callbacks)
    bob = Caller(tenant_id=tenant.pk, principal="user:2", session_id="", protocol_version="2026-07-28")
    create(bob, django_capture_on_commit_callbacks)
    services.tool_run_cancel(caller=alice, task_id=first.pk)
    create(alice, django_capture_on_commit_callbacks)

    assert refused.value.data == {"limit": 2, "scope": "principal"}


def test_a_tenant_may_have_only_so_many_unfinished_runs(
    tenant: Any, alice: Caller, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TASK_MAX_ACTIVE_PER_TENANT": 1}
    create(alice, django_capture_on_commit_callbacks)
    bob = Caller(tenant_id=tenant.pk, principal="user:2", session_id="", protocol_version="2026-07-28")

    with pytest.raises(TaskLimitExceeded, match="on this server"):
        create(bob, django_capture_on_commit_callbacks)


# ---- who sees a run -------------------------------------------------------------------------------------


def test_only_the_principal_session_and_tenant_that_started_a_run_see_it(
    tenant: Any, alice: Caller, django_capture_on_commit_callbacks: Any
) -> None:
    run = create(alice, django_capture_on_commit_callbacks)
    other_tenant = TenantFactory(slug="globex")
    strangers = [
        Caller(tenant_id=tenant.pk, principal="user:2", session_id="", protocol_version="2026-07-28"),
        Caller(tenant_id=other_tenant.pk, principal="user:1", session_id="", protocol_version="2026-07-28"),
        Caller(tenant_id=tenant.pk, principal="user:1", session_id="s-1", protocol_version="2025-11-25"),
    ]

    assert selectors.tool_run_get(caller=alice, task_id=run.pk) == run
    for stranger in strangers:
        assert selectors.tool_run_get(caller=stranger, task_id=run.pk) is None
        assert services.tool_run_cancel(caller=stranger, task_id=run.pk) is None
        assert services.tool_run_provide_input(caller=stranger, task_id=run.pk, responses={}) is None


def test_an_expired_run_is_gone(alice: Caller, django_capture_on_commit_callbacks: Any) -> None:
    run = create(alice, django_capture_on_commit_callbacks)
    ToolRun.objects.filter(pk=run.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert selectors.tool_run_get(caller=alice, task_id=run.pk) is None


# ---- the client's cancel and answers ---------------------------------------------------------------------


def test_cancel_stops_a_run_once_and_leaves_finished_runs_alone(
    alice: Caller, django_capture_on_commit_callbacks: Any
) -> None:
    run = create(alice, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks() as callbacks:
        cancelled = services.tool_run_cancel(caller=alice, task_id=run.pk)
    again = services.tool_run_cancel(caller=alice, task_id=run.pk)

    assert cancelled is not None and cancelled[0].status == "cancelled" and cancelled[1] is True
    assert again is not None and again[1] is False
    assert len(callbacks) == 3  # the run ended (the activity log); waiters re-read the task; the worker stops
    assert cancelled[0].finished_at is not None


def test_answers_resume_the_run_only_when_every_question_is_answered(
    alice: Caller, django_capture_on_commit_callbacks: Any
) -> None:
    run = waiting(create(alice, django_capture_on_commit_callbacks), {"a": ELICIT, "b": ELICIT})

    partly = services.tool_run_provide_input(caller=alice, task_id=run.pk, responses={"a": YES, "zzz": {"x": 1}})
    with django_capture_on_commit_callbacks() as callbacks:
        resumed = services.tool_run_provide_input(caller=alice, task_id=run.pk, responses={"b": YES})

    assert partly is not None and partly.status == "input_required" and list(partly.input_requests) == ["b"]
    assert resumed is not None and resumed.status == "working" and resumed.generation == 2
    assert set(resumed.input_answers) == {"a", "b"} and resumed.input_requests == {}
    assert len(callbacks) == 2  # the next start is scheduled; waiters re-read


def test_a_malformed_answer_to_an_open_question_is_refused(
    alice: Caller, django_capture_on_commit_callbacks: Any
) -> None:
    run = waiting(create(alice, django_capture_on_commit_callbacks), {"a": ELICIT})

    with pytest.raises(InvalidParams):
        services.tool_run_provide_input(caller=alice, task_id=run.pk, responses={"a": {"action": "perhaps"}})


def test_a_client_that_cannot_answer_completes_the_run_with_an_error_result(
    alice: Caller, django_capture_on_commit_callbacks: Any
) -> None:
    run = waiting(create(alice, django_capture_on_commit_callbacks), {"a": ELICIT})

    services.tool_run_fail_input(caller=alice, task_id=run.pk, message="the user closed the dialog")

    run.refresh_from_db()
    assert run.status == "completed" and run.result["isError"] is True


# ---- the worker's side ----------------------------------------------------------------------------------


def test_a_start_is_claimed_once(alice: Caller, django_capture_on_commit_callbacks: Any) -> None:
    run = create(alice, django_capture_on_commit_callbacks)

    claimed = services.tool_run_claim(tenant_id=run.tenant_id, run_id=run.pk, generation=1)
    second = services.tool_run_claim(tenant_id=run.tenant_id, run_id=run.pk, generation=1)

    assert isinstance(claimed, ToolRun) and claimed.attempts == 1
    assert second is Claim.BUSY


def test_a_start_past_the_tenants_running_limit_waits_queued_and_another_tenants_start_does_not(
    alice: Caller, django_capture_on_commit_callbacks: Any
) -> None:
    first, second = (create(alice, django_capture_on_commit_callbacks) for _ in range(2))
    other_tenant = TenantFactory(slug="globex")
    bob = Caller(tenant_id=other_tenant.pk, principal="user:2", session_id="", protocol_version="2026-07-28")
    others = create(bob, django_capture_on_commit_callbacks)

    def claim(run: ToolRun) -> ToolRun | Claim:
        return services.tool_run_claim(tenant_id=run.tenant_id, run_id=run.pk, generation=1, running_limit=1)

    assert isinstance(claim(first), ToolRun)
    assert claim(second) is Claim.WAIT
    assert isinstance(claim(others), ToolRun)
    second.refresh_from_db()
    assert (second.status, second.lease_until, second.attempts) == (ToolRun.Status.WORKING, None, 0)
    # The first run's lease lapses (its worker died): it stops counting, and the waiting start is claimed.
    ToolRun.objects.filter(pk=first.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert isinstance(claim(second), ToolRun)


def test_stale_messages_find_nothing_to_do(alice: Caller, django_capture_on_commit_callbacks: Any) -> None:
    run = create(alice, django_capture_on_commit_callbacks)
    other_tenant = TenantFactory(slug="globex")

    assert services.tool_run_claim(tenant_id=run.tenant_id, run_id=run.pk, generation=2) is Claim.STALE
    assert services.tool_run_claim(tenant_id=other_tenant.pk, run_id=run.pk, generation=1) is Claim.STALE
    services.tool_run_cancel(caller=alice, task_id=run.pk)
    assert services.tool_run_claim(tenant_id=run.tenant_id, run_id=run.pk, generation=1) is Claim.STALE


def test_the_lease_is_renewed_until_the_run_is_cancelled(
    alice: Caller, django_capture_on_commit_callbacks: Any
) -> None:
    run = create(alice, django_capture_on_commit_callbacks)
    services.tool_run_claim(tenant_id=run.tenant_id, run_id=run.pk, generation=1)

    assert services.tool_run_renew(tenant_id=run.tenant_id, run_id=run.pk, generation=1)
    services.tool_run_cancel(caller=alice, task_id=run.pk)
    assert not services.tool_run_renew(tenant_id=run.tenant_id, run_id=run.pk, generation=1)


def test_the_upstream_task_a_start_follows_is_kept_for_the_next_start_only_while_the_start_is_current(
    alice: Caller, django_capture_on_commit_callbacks: Any
) -> None:
    run = create(alice, django_capture_on_commit_callbacks)
    followed = {"upstream": 7, "taskId": "abc", "answered": ["confirm"]}
    record = services.tool_run_record_upstream_task

    assert record(tenant_id=run.tenant_id, run_id=run.pk, generation=1, upstream_task=followed)
    assert not record(tenant_id=run.tenant_id, run_id=run.pk, generation=2, upstream_task={"taskId": "stale"})
    assert ToolRun.objects.get(pk=run.pk).upstream_task == followed
    services.tool_run_cancel(caller=alice, task_id=run.pk)
    assert not record(tenant_id=run.tenant_id, run_id=run.pk, generation=1, upstream_task={"taskId": "late"})


def test_a_run_continues_while_unfinished_and_unexpired(alice: Caller, django_capture_on_commit_callbacks: Any) -> None:
    waiting_run = waiting(create(alice, django_capture_on_commit_callbacks), {"k": ELICIT})
    working_run = create(alice, django_capture_on_commit_callbacks)
    expired = create(alice, django_capture_on_commit_callbacks)
    ToolRun.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    cancelled = create(alice, django_capture_on_commit_callbacks)
    services.tool_run_cancel(caller=alice, task_id=cancelled.pk)

    def continues(run: ToolRun) -> bool:
        return services.tool_run_continues(tenant_id=run.tenant_id, run_id=run.pk)

    assert continues(waiting_run) and continues(working_run)
    assert not continues(expired) and not continues(cancelled)
    assert not services.tool_run_continues(tenant_id=TenantFactory(slug="globex").pk, run_id=working_run.pk)


def test_an_outcome_is_stored_by_its_transition_and_discarded_after_a_cancel(
    alice: Caller, django_capture_on_commit_callbacks: Any
) -> None:
    done = create(alice, django_capture_on_commit_callbacks)
    failed = create(alice, django_capture_on_commit_callbacks)
    cancelled = create(alice, django_capture_on_commit_callbacks)
    services.tool_run_cancel(caller=alice, task_id=cancelled.pk)
    result = {"content": [{"type": "text", "text": "ok"}]}
    error = {"code": -32603, "message": "broke"}

    def finish(run: ToolRun, outcome: TaskOutcome) -> ToolRun | None:
        return services.tool_run_finish(tenant_id=run.tenant_id, run_id=run.pk, generation=1, outcome=outcome)

    completed = finish(done, TaskOutcome(TaskEvent.COMPLETE, result=result))
    failure = finish(failed, TaskOutcome(TaskEvent.FAIL, error=error))
    discarded = finish(cancelled, TaskOutcome(TaskEvent.COMPLETE, result=result))

    assert completed is not None and (completed.status, completed.result) == ("completed", result)
    assert failure is not None and (failure.status, failure.error, failure.status_message) == ("failed", error, "broke")
    assert discarded is None
    cancelled.refresh_from_db()
    assert cancelled.status == "cancelled" and cancelled.result is None


def test_the_purge_deletes_expired_runs_and_stops_the_running_ones(
    alice: Caller, django_capture_on_commit_callbacks: Any
) -> None:
    kept = create(alice, django_capture_on_commit_callbacks)
    expired = create(alice, django_capture_on_commit_callbacks)
    ToolRun.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    with django_capture_on_commit_callbacks() as callbacks:
        deleted = services.tool_runs_purge_expired()

    assert deleted == 1
    assert list(ToolRun.objects.values_list("pk", flat=True)) == [kept.pk]
    assert len(callbacks) == 1
