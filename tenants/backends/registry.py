"""The registry of Python functions that tools, resource templates and prompts may name in their config.

Functions register themselves with ``@python_tool("name")``, ``@python_resource_template("name")`` or
``@python_prompt("name")`` when their module is imported (``TenantsConfig.ready`` imports the built-in ones). A
tool function that asks its questions first and then calls ``ctx.continue_as_task()`` registers with
``continues_as_task=True``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

JSONObject = dict[str, Any]
# ``async def fn(ctx, **arguments) -> Any``: the value goes through ``mcp_core.content.tool_result``.
PythonToolFunction = Callable[..., Awaitable[Any]]
# ``async def fn(ctx, uri, **variables) -> [{uri, mimeType, text | blob}]``.
PythonTemplateFunction = Callable[..., Awaitable[list[JSONObject]]]
# ``async def fn(ctx, **arguments) -> str | [message] | {messages, description?}`` (``content.prompt_result``).
PythonPromptFunction = Callable[..., Awaitable[Any]]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
G = TypeVar("G")


class UnknownPythonFunction(LookupError):
    """A config names a Python function that no module registered."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        listing = ", ".join(known) if known else "none registered"
        super().__init__(f"No Python {kind} function named {name!r} is registered (known: {listing}).")
        self.kind = kind
        self.name = name


class PythonRegistry:
    """Named async functions, one namespace each for tools, resource templates and prompts."""

    def __init__(self) -> None:
        self._tools: dict[str, PythonToolFunction] = {}
        self._templates: dict[str, PythonTemplateFunction] = {}
        self._prompts: dict[str, PythonPromptFunction] = {}
        self._continue_as_task: set[str] = set()
        self._reserved: dict[str, frozenset[str]] = {}

    def tool(self, name: str, *, continues_as_task: bool = False) -> Callable[[F], F]:
        """Decorator registering ``async def fn(ctx: ToolContext, **arguments)`` under ``name``.

        ``continues_as_task``: where calls may be tasks, they run in the request until the function calls
        ``ctx.continue_as_task()`` (its questions go through MRTR first), instead of becoming tasks at once.
        """
        register = self._decorator(self._tools, "tool", name)
        if continues_as_task:
            self._continue_as_task.add(name)
        else:
            self._continue_as_task.discard(name)
        return register

    def tool_continues_as_task(self, name: str) -> bool:
        return name in self._continue_as_task

    def resource_template(self, name: str) -> Callable[[F], F]:
        """Decorator registering ``async def fn(ctx: ToolContext, uri: str, **variables)`` under ``name``."""
        return self._decorator(self._templates, "resource template", name)

    def prompt(self, name: str) -> Callable[[F], F]:
        """Decorator registering ``async def fn(ctx: ToolContext, **arguments: str)`` under ``name``."""
        return self._decorator(self._prompts, "prompt", name)

    def get_tool(self, name: str) -> PythonToolFunction:
        """The tool function called ``name``. Raises ``UnknownPythonFunction``."""
        return self._lookup(self._tools, "tool", name)

    def get_resource_template(self, name: str) -> PythonTemplateFunction:
        """The resource-template function called ``name``. Raises ``UnknownPythonFunction``."""
        return self._lookup(self._templates, "resource template", name)

    def get_prompt(self, name: str) -> PythonPromptFunction:
        """The prompt function called ``name``. Raises ``UnknownPythonFunction``."""
        return self._lookup(self._prompts, "prompt", name)

    def tool_names(self) -> list[str]:
        return sorted(self._tools)

    def resource_template_names(self) -> list[str]:
        return sorted(self._templates)

    def prompt_names(self) -> list[str]:
        return sorted(self._prompts)

    def names(self) -> list[str]:
        """Every registered name, of any kind."""
        return sorted({*self._tools, *self._templates, *self._prompts})

    def function(self, name: str) -> Callable[..., Any] | None:
        """The function registered as ``name`` (tool first, then template, then prompt), or None."""
        return self._tools.get(name) or self._templates.get(name) or self._prompts.get(name)

    def reserve_package(self, package: str, *, tenants: tuple[str, ...]) -> None:
        """Keep the functions named ``<package>.*`` for the tenants with these slugs (the built-in fixtures that
        register them), so platform staff cannot grant them to anyone else."""
        self._reserved[package] = frozenset(tenants)

    def reserved_for(self, name: str) -> frozenset[str] | None:
        """The tenant slugs that alone may bind ``name``, or None when any tenant may be granted it."""
        package, dot, _ = name.partition(".")
        return self._reserved.get(package) if dot else None

    @staticmethod
    def _lookup(table: dict[str, G], kind: str, name: str) -> G:
        try:
            return table[name]
        except KeyError:
            raise UnknownPythonFunction(kind, name, sorted(table)) from None

    @staticmethod
    def _decorator(table: dict[str, Any], kind: str, name: str) -> Callable[[F], F]:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a Python {kind} function needs a non-empty name")

        def register(fn: F) -> F:
            # Kept out of the ``if``: as a TypeGuard it would narrow ``fn`` away from ``F``.
            is_async = inspect.iscoroutinefunction(fn)
            if not is_async:
                raise TypeError(f"Python {kind} function {name!r} must be declared with 'async def'")
            existing = table.get(name)
            # Re-importing the same module (autoreload, tests) registers the same function again.
            if existing is not None and existing.__qualname__ != fn.__qualname__:
                raise ValueError(f"a Python {kind} function named {name!r} is already registered")
            table[name] = fn
            return fn

        return register


default_registry = PythonRegistry()


def python_tool(
    name: str, *, continues_as_task: bool = False, registry: PythonRegistry = default_registry
) -> Callable[[F], F]:
    """Register an async tool function under ``name`` (in the default registry unless told otherwise)."""
    return registry.tool(name, continues_as_task=continues_as_task)


def python_resource_template(name: str, *, registry: PythonRegistry = default_registry) -> Callable[[F], F]:
    """Register an async resource-template function under ``name``."""
    return registry.resource_template(name)


def python_prompt(name: str, *, registry: PythonRegistry = default_registry) -> Callable[[F], F]:
    """Register an async prompt function under ``name``."""
    return registry.prompt(name)


__all__ = [
    "PythonPromptFunction",
    "PythonRegistry",
    "PythonTemplateFunction",
    "PythonToolFunction",
    "UnknownPythonFunction",
    "default_registry",
    "python_prompt",
    "python_resource_template",
    "python_tool",
]
