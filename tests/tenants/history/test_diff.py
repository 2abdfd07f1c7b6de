"""A version against the current row, field by field: short values as they are, long texts and JSON values (pretty,
keys sorted) as lines taken out and put in, with unchanged stretches left out; JSON values compared as JSON."""

from __future__ import annotations

from tenants.history.diff import changed_fields, field_diffs, same, shown

FIELDS = [("description", "Description"), ("input_schema", "Input schema"), ("enabled", "Enabled")]


def test_short_values_are_shown_as_they_are_and_only_changes_count() -> None:
    description, schema, enabled = field_diffs(
        FIELDS,
        {"description": "Rainy.", "input_schema": {"type": "object"}, "enabled": True},
        {"description": "Sunny.", "input_schema": {"type": "object"}, "enabled": False},
    )

    assert (description.first, description.second, description.changed) == ("Rainy.", "Sunny.", True)
    assert description.lines == ()
    assert not schema.changed and schema.lines == ()
    assert (enabled.first, enabled.second) == ("yes", "no")


def test_json_values_are_diffed_as_sorted_pretty_lines() -> None:
    now = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}
    then = {"properties": {"days": {"type": "integer"}, "city": {"type": "string", "minLength": 1}}, "type": "object"}

    [diff] = field_diffs([("input_schema", "Input schema")], {"input_schema": now}, {"input_schema": then})

    assert [(line.kind, line.text) for line in diff.lines] == [
        ("same", "{"),
        ("same", '  "properties": {'),
        ("same", '    "city": {'),
        ("added", '      "minLength": 1,'),
        ("same", '      "type": "string"'),
        ("same", "    },"),
        ("same", '    "days": {'),
    ], "key order is not a change: only the new key is"
    assert {line.sign for line in diff.lines} <= {"\u2212", "+", " ", "\u22ef"}


def test_unchanged_stretches_of_a_long_text_are_left_out() -> None:
    before = "\n".join(f"line {n}" for n in range(40))
    after = before.replace("line 20", "line twenty")

    [diff] = field_diffs([("text", "Text")], {"text": before}, {"text": after})

    assert len(diff.lines) == 3 + 2 + 3, "three lines of context each side of the change"
    assert [line.text for line in diff.lines if line.kind != "same"] == ["line 20", "line twenty"]


def test_values_are_compared_as_json() -> None:
    assert same({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not same(1, True), "1 and true are different JSON values"
    assert changed_fields(["a", "b"], {"a": 1, "b": [1]}, {"a": 1.0, "b": [1]}) == ["a"]
    assert shown(None) == "" and shown([1]) == "[\n  1\n]"
