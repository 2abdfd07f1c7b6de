"""The compatibility rule of held input schemas: what may refuse a call made to the approved schema is incompatible,
what only widens or rewords is not."""

from __future__ import annotations

from typing import Any

import pytest

from tenants.pinning.compatibility import input_schema_breaks

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "Where"},
        "days": {"type": "integer"},
        "units": {"type": "string", "enum": ["C", "F"]},
    },
    "required": ["city"],
}


def changed(**edits: Any) -> dict[str, Any]:
    schema = {**WEATHER, "properties": dict(WEATHER["properties"])}
    for key, value in edits.items():
        if key in WEATHER["properties"] or key.startswith("new_"):
            if value is None:
                del schema["properties"][key]
            else:
                schema["properties"][key] = value
        else:
            schema[key] = value
    return schema


@pytest.mark.parametrize(
    ("proposed", "reason"),
    [
        (changed(required=["city", "days"]), "'days' is now required"),
        (changed(days=None), "'days' was removed"),
        (changed(days={"type": "string"}), "'days': the type changed from integer to string"),
        (changed(units={"type": "string", "enum": ["C"]}), "'units': no longer accepts \"F\""),
        (changed(city={"type": "string", "pattern": "^[A-Z]"}), "'city': its pattern was added"),
        (changed(additionalProperties=False), "the arguments: its additionalProperties was added"),
        (changed(type="array"), "the arguments: the type changed from object to array"),
        (changed(new_when={"type": "string"}, required=["city", "new_when"]), "'new_when' is now required"),
        (changed(days={"type": "integer", "minimum": 1}), "'days': its minimum was added"),
    ],
)
def test_what_may_refuse_an_approved_call_is_incompatible(proposed: dict[str, Any], reason: str) -> None:
    assert reason in input_schema_breaks(WEATHER, proposed)


@pytest.mark.parametrize(
    "proposed",
    [
        WEATHER,
        changed(new_when={"type": "string"}),  # an optional property more
        changed(days={"type": "number"}),  # integer widened to number
        changed(days={"type": ["integer", "null"]}),
        changed(units={"type": "string", "enum": ["C", "F", "K"]}),
        changed(city={"type": "string", "description": "The city, in words", "title": "City", "examples": ["Oslo"]}),
        changed(required=[]),  # nothing required any more
    ],
)
def test_what_only_widens_or_rewords_is_compatible(proposed: dict[str, Any]) -> None:
    assert input_schema_breaks(WEATHER, proposed) == []


def test_a_schema_that_accepts_anything_is_compatible_and_a_removed_property_counts_even_so() -> None:
    assert input_schema_breaks(WEATHER, True) == []
    assert input_schema_breaks(WEATHER, {"description": "anything"}) == []
    # Dropping the properties list drops what they meant: the upstream no longer reads them.
    assert sorted(input_schema_breaks(WEATHER, {"type": "object"})) == [
        "'city' was removed",
        "'days' was removed",
        "'units' was removed",
    ]


def test_nested_properties_and_array_items_are_compared_level_by_level() -> None:
    approved = {
        "type": "object",
        "properties": {
            "address": {"type": "object", "properties": {"street": {"type": "string"}}},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }
    proposed = {
        "type": "object",
        "properties": {
            "address": {"type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"]},
            "tags": {"type": "array", "items": {"type": "integer"}},
        },
    }
    assert input_schema_breaks(approved, proposed) == [
        "'address.street' is now required",
        "'tags[]': the type changed from string to integer",
    ]


def test_a_combinator_or_reference_that_changed_is_incompatible_whatever_it_means() -> None:
    approved = {"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}
    proposed = {"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}]}}}
    assert input_schema_breaks(approved, proposed) == ["'x': its anyOf was changed"]
    assert input_schema_breaks(proposed, approved) == ["'x': its anyOf was changed"]
