"""``subscriptions/listen``: the honoured filter and the notifications a stream is owed."""

from __future__ import annotations

import pytest

from mcp_core.errors import InvalidParams
from mcp_core.features.subscriptions import parse_listen

TAG = "io.modelcontextprotocol/subscriptionId"


def test_the_acknowledgement_carries_exactly_the_honoured_subset_and_the_subscription_id():
    wanted = {
        "toolsListChanged": True,
        "promptsListChanged": False,
        "resourceSubscriptions": ["file:///a", "file:///a", "file:///b"],
        "taskIds": ["t-1"],
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
    [[], {"toolsListChanged": "yes"}, {"resourceSubscriptions": "x://1"}, {"resourceSubscriptions": [1]}],
)
def test_a_malformed_filter_is_invalid_params(notifications):
    with pytest.raises(InvalidParams):
        parse_listen({"notifications": notifications}, 1)
