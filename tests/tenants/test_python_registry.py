"""The Python function registry: decorators register async functions; lookups explain what is missing."""

from __future__ import annotations

import pytest

from tenants.backends.registry import (
    PythonRegistry,
    UnknownPythonFunction,
    default_registry,
    python_prompt,
    python_resource_template,
    python_tool,
)


def test_decorators_register_into_the_given_registry() -> None:
    registry = PythonRegistry()

    @python_tool("greet", registry=registry)
    async def greet(ctx: object, name: str) -> str:
        return f"hi {name}"

    @python_resource_template("page", registry=registry)
    async def page(ctx: object, uri: str) -> list[dict]:
        return [{"uri": uri, "text": ""}]

    @python_prompt("brief", registry=registry)
    async def brief(ctx: object, topic: str) -> str:
        return f"Brief me on {topic}."

    assert registry.get_tool("greet") is greet
    assert registry.get_resource_template("page") is page
    assert registry.get_prompt("brief") is brief
    assert registry.tool_names() == ["greet"]
    assert registry.resource_template_names() == ["page"]
    assert registry.prompt_names() == ["brief"]
    with pytest.raises(UnknownPythonFunction, match="No Python prompt function named 'greet'"):
        registry.get_prompt("greet")


def test_a_tool_may_register_as_continuing_as_a_task_by_itself() -> None:
    registry = PythonRegistry()

    @python_tool("asks_first", continues_as_task=True, registry=registry)
    async def asks_first(ctx: object) -> str:
        return "done"

    @python_tool("plain", registry=registry)
    async def plain(ctx: object) -> str:
        return "done"

    assert registry.tool_continues_as_task("asks_first")
    assert not registry.tool_continues_as_task("plain")
    assert not registry.tool_continues_as_task("unknown")


def test_unknown_name_raises_a_clear_error() -> None:
    registry = PythonRegistry()

    @registry.tool("known")
    async def known(ctx: object) -> str:
        return ""

    with pytest.raises(
        UnknownPythonFunction, match=r"No Python tool function named 'missing' is registered \(known: known\)"
    ):
        registry.get_tool("missing")
    with pytest.raises(UnknownPythonFunction, match="none registered"):
        registry.get_resource_template("missing")


def test_only_async_functions_may_register() -> None:
    registry = PythonRegistry()

    def plain(ctx: object) -> str:
        return ""

    with pytest.raises(TypeError, match="must be declared with 'async def'"):
        registry.tool("plain")(plain)


def test_a_name_cannot_be_taken_twice() -> None:
    registry = PythonRegistry()

    @registry.tool("x")
    async def first(ctx: object) -> str:
        return ""

    async def second(ctx: object) -> str:
        return ""

    with pytest.raises(ValueError, match="already registered"):
        registry.tool("x")(second)


def test_built_in_functions_are_registered_when_the_app_is_ready() -> None:
    tools = default_registry.tool_names()

    assert {"conformance.sampling", "conformance.tool_with_progress", "demo.echo", "demo.add"} <= set(tools)
    assert default_registry.resource_template_names() == ["conformance.template_data"]
