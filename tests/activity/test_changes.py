"""What an admin change's page shows it changed: fields before → after in name order, secrets never, and a bulk
change's names."""

from __future__ import annotations

from mcp_platform.activity.changes import FieldChange, bulk_summary, field_changes


def test_a_change_lists_each_field_before_and_after_in_name_order() -> None:
    details = {
        "object_type": "tool",
        "object_id": "3",
        "before": {"description": "Find an order.", "enabled": True},
        "after": {"description": "Find an order by its number.", "enabled": False},
    }
    assert field_changes(details) == [
        FieldChange("description", "Description", "Find an order.", "Find an order by its number."),
        FieldChange("enabled", "Enabled", "true", "false"),
    ]


def test_a_creation_has_nothing_before_and_a_deletion_nothing_after() -> None:
    created = field_changes({"before": None, "after": {"input_schema": {"type": "object"}}})
    deleted = field_changes({"before": {"name": "greet"}, "after": None})
    assert created == [FieldChange("input_schema", "Input schema", "—", '{\n  "type": "object"\n}')]
    assert deleted == [FieldChange("name", "Name", "greet", "—")]


def test_secret_values_are_never_shown_even_from_a_row_that_kept_one() -> None:
    details = {"before": {"api_token": "old-token", "value": "sk-1"}, "after": {"api_token": "new-token", "value": ""}}
    shown = field_changes(details)
    assert [(c.field, c.before, c.after) for c in shown] == [
        ("api_token", "[redacted]", "[redacted]"),
        ("value", "[redacted]", "—"),
    ]
    assert "sk-1" not in repr(shown) and "token" not in repr([c.before + c.after for c in shown])


def test_a_very_long_value_is_cut_on_the_page() -> None:
    [change] = field_changes({"before": None, "after": {"description": "x" * 5000}})
    assert len(change.after) == 2001 and change.after.endswith("…")


def test_a_bulk_change_lists_the_names_it_added_changed_and_removed() -> None:
    summary = bulk_summary(
        {"operation": "OpenAPI import", "source": "petstore", "actor": "admin", "added": ["b", "a"], "removed": []}
    )
    assert summary is not None
    assert (summary.operation, summary.added, summary.changed, summary.removed) == (
        "OpenAPI import",
        ["a", "b"],
        [],
        [],
    )
    assert bulk_summary({"before": None, "after": {}}) is None
    assert field_changes(None) == [] and bulk_summary("text") is None
