"""``subscriptions/listen``: the honoured filter and the notifications a stream is owed."""

from __future__ import annotations

import pytest

from mcp_core.errors import InvalidParams, MissingClientCapability
from mcp_core.features.subscriptions import parse_listen
from mcp_core.tasks import TASKS_EXTENSION

TAG = "io.modelcontextprotocol/subscriptionId"


def test_the_acknowledgement_carries_exactly_the_honoured_subset_and_the_subscription_id():
    wanted = {
        "toolsListChanged": True,
        "promptsListChanged": False,
        "resourceSubscriptions": ["file:///a", "file:///a", "file:///b"],
    }
    method, params = parse_listen({"notifications": wanted}, 7).acknowledgement()
    assert method == "notifications/subscriptions/acknowledged"
    assert params == {
        "_meta": {TAG: 7},
        "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["file:///a", "file:///b"]},
    }


def test_only_requested_list_changes_and_subscribed_resources_are_notified():
    subscription = parse_listen(
        {"notifications": {"promptsListChanged": True, "resourceSubscriptions": ["x://1"]}}, "s"
    )
    assert subscription.on_catalog_changed("tools") is None
    assert subscription.on_catalog_changed("prompts") == ("notifications/prompts/list_changed", {"_meta": {TAG: "s"}})
    assert subscription.on_resource_updated("x://2") is None
    assert subscription.on_resource_updated("x://1") == (
        "notifications/resources/updated",
        {"_meta": {TAG: "s"}, "uri": "x://1"},
    )


def test_an_empty_filter_is_acknowledged_empty():
    assert parse_listen({}, 1).acknowledgement()[1]["notifications"] == {}


@pytest.mark.parametrize(
    "notifications",
    [
        [],
        {"toolsListChanged": "yes"},
        {"resourceSubscriptions": "x://1"},
        {"resourceSubscriptions": [1]},
        {"resourceSubscriptions": [f"x://{n}" for n in range(1001)]},
    ],
)
def test_a_malformed_filter_is_invalid_params(notifications):
    with pytest.raises(InvalidParams):
        parse_listen({"notifications": notifications}, 1)


WITH_TASKS = {"extensions": {TASKS_EXTENSION: {}}}


def test_task_ids_are_acknowledged_only_for_the_callers_own_tasks_in_the_clients_order():
    asked = parse_listen({"notifications": {"taskIds": ["t-3", "t-1", "t-3", "t-9"]}}, "s", WITH_TASKS)
    assert "taskIds" not in asked.acknowledgement()[1]["notifications"]
    honoured = asked.honouring_tasks(["t-1", "t-3"])
    assert honoured.acknowledgement()[1]["notifications"] == {"taskIds": ["t-3", "t-1"]}
    assert honoured.on_task({"taskId": "t-1", "status": "completed"}) == (
        "notifications/tasks",
        {"taskId": "t-1", "status": "completed", "_meta": {TAG: "s"}},
    )
    assert "taskIds" not in asked.honouring_tasks([]).acknowledgement()[1]["notifications"]


def test_task_ids_without_the_tasks_extension_are_missing_capability():
    with pytest.raises(MissingClientCapability) as caught:
        parse_listen({"notifications": {"taskIds": ["t-1"]}}, 1, {"elicitation": {}})
    assert caught.value.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


@pytest.mark.parametrize("task_ids", ["t-1", [""], [7], ["t"] * 1001])
def test_malformed_task_ids_are_invalid_params(task_ids):
    with pytest.raises(InvalidParams):
        parse_listen({"notifications": {"taskIds": task_ids}}, 1, WITH_TASKS)
