"""A Python tool function's signature becomes its input schema: types from the hints, defaults not required."""

from __future__ import annotations

from typing import Any, Literal

from mcp_core.context import ToolContext
from tenants.backends.python_schema import function_signature_text, signature_schema, type_schema
from tenants.backends.registry import default_registry


async def everything(
    ctx: ToolContext,
    name: str,
    count: int,
    ratio: float,
    loud: bool,
    tags: list[str],
    mode: Literal["fast", "slow"],
    note: str | None = None,
    limit: int = 10,
    anything: Any = None,
    *,
    scores: list[float] | None = None,
    **more: Any,
) -> str:
    return ""


def test_each_kind_of_hint_becomes_its_json_schema_type() -> None:
    schema = signature_schema(everything)

    assert schema == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "loud": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "note": {"type": ["string", "null"], "default": None},
            "limit": {"type": "integer", "default": 10},
            "anything": {"default": None},
            "scores": {"type": ["array", "null"], "items": {"type": "number"}, "default": None},
        },
        "required": ["name", "count", "ratio", "loud", "tags", "mode"],
    }


def test_the_demo_counter_gets_its_two_arguments_with_their_defaults() -> None:
    function = default_registry.get_tool("demo.count_slowly")

    assert signature_schema(function) == {
        "type": "object",
        "properties": {"steps": {"type": "integer", "default": 5}, "delay_ms": {"type": "integer", "default": 500}},
    }
    assert function_signature_text("demo.count_slowly", function) == (
        "demo.count_slowly(steps: int = 5, delay_ms: int = 500)"
    )


def test_a_function_taking_only_its_context_has_no_properties() -> None:
    async def nothing(ctx: ToolContext) -> str:
        return ""

    assert signature_schema(nothing) == {"type": "object", "properties": {}}


def test_unusual_hints_stay_open_rather_than_wrong() -> None:
    assert type_schema(dict[str, int]) == {"type": "object"}
    assert type_schema(Literal[1, "a"]) == {"enum": [1, "a"]}
    assert type_schema(int | str) == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert type_schema(object) == {}
