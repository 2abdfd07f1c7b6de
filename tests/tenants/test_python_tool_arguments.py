"""A Python tool is called with exactly the arguments its function takes; anything else is the caller's mistake."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_core.errors import ToolError
from tenants.backends.python import tool_invoke
from tenants.backends.registry import PythonRegistry
from tenants.models import Tool

registry = PythonRegistry()


@registry.tool("args.greet")
async def greet(ctx: Any, name: str, punctuation: str = "!") -> str:
    return f"hello {name}{punctuation}"


@registry.tool("args.keyword_only")
async def keyword_only(ctx: Any, *, count: int) -> int:
    return count * 2


@registry.tool("args.anything")
async def anything(ctx: Any, first: str, **rest: Any) -> list[str]:
    return [first, *sorted(rest)]


@registry.tool("args.positional")
async def positional(ctx: Any, value: int, /) -> int:
    return value


def invoke(function: str, arguments: dict[str, Any]) -> Any:
    import asyncio

    tool = Tool(name="t", config={"function": function})
    return asyncio.run(tool_invoke(tool, arguments, ctx=None, registry=registry))  # type: ignore[arg-type]


def test_declared_arguments_reach_the_function() -> None:
    assert invoke("args.greet", {"name": "ada"}) == "hello ada!"
    assert invoke("args.greet", {"name": "ada", "punctuation": "?"}) == "hello ada?"
    assert invoke("args.keyword_only", {"count": 4}) == 8


def test_a_function_with_keyword_catch_all_takes_extra_arguments() -> None:
    assert invoke("args.anything", {"first": "a", "zeta": 1, "alpha": 2}) == ["a", "alpha", "zeta"]


@pytest.mark.parametrize(
    ("function", "arguments", "message"),
    [
        ("args.greet", {}, "missing a required argument: 'name'"),
        ("args.greet", {"name": "ada", "shout": True}, "unexpected keyword argument 'shout'"),
        ("args.keyword_only", {}, "missing a required argument: 'count'"),
        ("args.anything", {"first": "a", "ctx": 1}, "multiple values for argument 'ctx'"),
        ("args.greet", {"name": "ada", "ctx": 1}, "multiple values for argument 'ctx'"),
        ("args.positional", {"value": 1}, "'value' parameter is positional only"),
    ],
)
def test_arguments_the_function_does_not_take_are_a_tool_error(
    function: str, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolError, match="Invalid arguments: .*" + message.replace("(", r"\(").replace(")", r"\)")):
        invoke(function, arguments)
