"""The task state table, a task's wire shapes in both eras, when a call becomes a task, and answers to questions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from mcp_core.errors import InvalidParams, MethodNotFound, MissingClientCapability
from mcp_core.mrtr import question_digest
from mcp_core.tasks import (
    TASKS_EXTENSION,
    TERMINAL,
    TRANSITIONS,
    Execution,
    TaskEvent,
    TaskSnapshot,
    TaskStateError,
    TaskStatus,
    TaskSupport,
    accept_responses,
    create_task_result,
    detailed_task,
    iso_timestamp,
    next_status,
    plan_call,
    requested_ttl,
    task_fields,
)

CREATED = datetime(2026, 7, 28, 10, 30, tzinfo=UTC)
WITH_TASKS = {"extensions": {TASKS_EXTENSION: {}}}
ELICIT = {"method": "elicitation/create", "params": {"message": "Sure?", "requestedSchema": {"type": "object"}}}


def snapshot(status: TaskStatus = TaskStatus.WORKING, **fields: object) -> TaskSnapshot:
    return TaskSnapshot("t-1", status, CREATED, CREATED + timedelta(seconds=2), 60_000, poll_interval_ms=500, **fields)  # type: ignore[arg-type]


# ---- the state table ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "event", "after"),
    [
        (TaskStatus.WORKING, TaskEvent.NEEDS_INPUT, TaskStatus.INPUT_REQUIRED),
        (TaskStatus.WORKING, TaskEvent.COMPLETE, TaskStatus.COMPLETED),
        (TaskStatus.WORKING, TaskEvent.FAIL, TaskStatus.FAILED),
        (TaskStatus.WORKING, TaskEvent.CANCEL, TaskStatus.CANCELLED),
        (TaskStatus.INPUT_REQUIRED, TaskEvent.INPUT_PROVIDED, TaskStatus.WORKING),
        (TaskStatus.INPUT_REQUIRED, TaskEvent.CANCEL, TaskStatus.CANCELLED),
        (TaskStatus.INPUT_REQUIRED, TaskEvent.FAIL, TaskStatus.FAILED),
    ],
)
def test_allowed_transitions_lead_where_the_spec_says(status, event, after):
    assert next_status(status, event) is after


@pytest.mark.parametrize("status", sorted(TERMINAL))
@pytest.mark.parametrize("event", list(TaskEvent))
def test_terminal_statuses_never_change(status, event):
    with pytest.raises(TaskStateError):
        next_status(status, event)


def test_a_working_task_cannot_be_given_input_it_did_not_ask_for():
    with pytest.raises(TaskStateError, match="input_provided"):
        next_status(TaskStatus.WORKING, TaskEvent.INPUT_PROVIDED)


def test_every_transition_starts_outside_the_terminal_statuses():
    assert all(status not in TERMINAL for status, _ in TRANSITIONS)


# ---- wire shapes --------------------------------------------------------------------------------------


def test_timestamps_are_utc_with_milliseconds_and_z():
    moment = datetime(2026, 1, 2, 3, 4, 5, 678_901, tzinfo=timezone(timedelta(hours=2)))
    assert iso_timestamp(moment) == "2026-01-02T01:04:05.678Z"


def test_stateless_task_fields_use_millisecond_names():
    wire = task_fields(snapshot(status_message="half way"), stateless=True)
    assert wire == {
        "taskId": "t-1",
        "status": "working",
        "statusMessage": "half way",
        "createdAt": "2026-07-28T10:30:00.000Z",
        "lastUpdatedAt": "2026-07-28T10:30:02.000Z",
        "ttlMs": 60_000,
        "pollIntervalMs": 500,
    }


def test_handshake_task_fields_use_the_2025_names():
    wire = task_fields(snapshot(), stateless=False)
    assert (wire["ttl"], wire["pollInterval"]) == (60_000, 500)
    assert "ttlMs" not in wire and "pollIntervalMs" not in wire


def test_create_task_result_is_flat_in_the_stateless_era_and_nested_before():
    flat = create_task_result(snapshot(), stateless=True)
    nested = create_task_result(snapshot(), stateless=False)
    assert flat["resultType"] == "task" and flat["taskId"] == "t-1" and "task" not in flat
    assert set(nested) == {"task"} and nested["task"]["taskId"] == "t-1"


def test_detailed_task_inlines_only_what_its_status_has():
    result = {"content": [{"type": "text", "text": "done"}]}
    error = {"code": -32603, "message": "boom"}
    assert detailed_task(snapshot(TaskStatus.COMPLETED, result=result))["result"] == result
    assert detailed_task(snapshot(TaskStatus.FAILED, error=error))["error"] == error
    waiting = detailed_task(snapshot(TaskStatus.INPUT_REQUIRED, input_requests={"k": ELICIT}))
    assert waiting["inputRequests"] == {"k": ELICIT}
    working = detailed_task(snapshot(result=result, error=error))
    assert not {"result", "error", "inputRequests", "requestState"} & set(working)


# ---- when a call becomes a task -----------------------------------------------------------------------


def plan(**overrides: object) -> Execution:
    arguments: dict[str, object] = {
        "version": "2026-07-28",
        "stateless": True,
        "tool": "job",
        "support": TaskSupport.OPTIONAL,
        "continues_as_task": False,
        "client_capabilities": WITH_TASKS,
        "task_param": None,
    }
    arguments.update(overrides)
    return plan_call(**arguments)  # type: ignore[arg-type]


def test_stateless_server_makes_a_task_when_the_client_declares_the_extension():
    assert plan() is Execution.TASK
    assert plan(continues_as_task=True) is Execution.INLINE_UNTIL_TASK
    assert plan(client_capabilities={}) is Execution.INLINE
    assert plan(support=TaskSupport.FORBIDDEN) is Execution.INLINE


def test_stateless_legacy_task_param_changes_nothing():
    assert plan(support=TaskSupport.FORBIDDEN, task_param={"ttl": 1000}) is Execution.INLINE


def test_stateless_required_tool_without_the_extension_is_missing_capability():
    with pytest.raises(MissingClientCapability) as caught:
        plan(support=TaskSupport.REQUIRED, client_capabilities={"extensions": {}})
    assert caught.value.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


def test_handshake_client_decides_with_params_task():
    handshake = {"version": "2025-11-25", "stateless": False, "client_capabilities": {}}
    assert plan(**handshake, task_param={"ttl": 5000}) is Execution.TASK
    assert plan(**handshake) is Execution.INLINE
    with pytest.raises(MethodNotFound, match="must be called as a task"):
        plan(**handshake, support=TaskSupport.REQUIRED)
    with pytest.raises(MethodNotFound, match="does not support task"):
        plan(**handshake, support=TaskSupport.FORBIDDEN, task_param={})
    with pytest.raises(InvalidParams):
        plan(**handshake, task_param="soon")


def test_revisions_before_tasks_run_every_call_inline():
    assert plan(version="2025-06-18", stateless=False, support=TaskSupport.REQUIRED) is Execution.INLINE


@pytest.mark.parametrize("ttl", [0, -5, 1.5, "60000", True])
def test_a_requested_ttl_must_be_a_positive_integer(ttl):
    with pytest.raises(InvalidParams):
        requested_ttl({"ttl": ttl})


def test_a_requested_ttl_is_read_in_milliseconds():
    assert requested_ttl({"ttl": 60_000}) == 60_000
    assert requested_ttl({}) is None


# ---- answers to a task's questions --------------------------------------------------------------------


def test_answers_to_open_questions_are_kept_with_the_question_they_answer():
    accepted = accept_responses({"k": ELICIT}, {"k": {"action": "accept", "content": {"ok": True}}})
    assert accepted["k"].question == question_digest(ELICIT["method"], ELICIT["params"])
    assert accepted["k"].result["action"] == "accept"


def test_answers_to_keys_that_are_not_open_are_ignored():
    assert accept_responses({"k": ELICIT}, {"unknown-key": {"ignored": True}, "other": "not even an object"}) == {}


def test_a_malformed_answer_to_an_open_question_is_invalid_params():
    with pytest.raises(InvalidParams):
        accept_responses({"k": ELICIT}, {"k": {"action": "maybe"}})
    with pytest.raises(InvalidParams):
        accept_responses({"k": ELICIT}, ["not", "a", "map"])
    with pytest.raises(InvalidParams, match=r"inputResponses\['k'\] must be an object"):
        accept_responses({"k": ELICIT}, {"k": "accept"})
