"""The Python backend: tools, resource templates and prompts implemented by functions in the registry."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_core.content import prompt_result
from mcp_core.context import ToolContext
from mcp_core.errors import ToolError
from tenants.backends.registry import PythonRegistry, default_registry
from tenants.models import Prompt, ResourceTemplate, Tool

JSONObject = dict[str, Any]


async def tool_invoke(
    tool: Tool, arguments: JSONObject, ctx: ToolContext, *, registry: PythonRegistry = default_registry
) -> Any:
    """Call ``fn(ctx, **arguments)``. Raises ``UnknownPythonFunction`` when the function is gone, and ``ToolError``
    (the caller's mistake, not the function's) for arguments the function does not take."""
    function = registry.get_tool(tool.config["function"])
    if not _parameters_of(function).accept(arguments):
        try:
            inspect.signature(function).bind(ctx, **arguments)
        except TypeError as exc:
            raise ToolError(f"Invalid arguments: {exc}") from None
    return await function(ctx, **arguments)


@dataclass(frozen=True, slots=True)
class _Parameters:
    """What a tool function takes after its context, read once: ``inspect.signature`` costs tens of
    microseconds a call, more than the rest of a small tool's run."""

    context: str  # the first parameter's name: an argument of that name is refused by ``bind``
    names: frozenset[str]
    required: frozenset[str]
    any_keyword: bool
    plain: bool  # keyword-bindable parameters only: set arithmetic decides exactly as ``bind`` would

    def accept(self, arguments: JSONObject) -> bool:
        """True when ``fn(ctx, **arguments)`` certainly binds; False means ask ``inspect`` for the verdict."""
        if not self.plain or self.context in arguments:
            return False
        keys = arguments.keys()
        return self.required <= keys and (self.any_keyword or keys <= self.names)


@functools.lru_cache(maxsize=1024)
def _parameters_of(function: Callable[..., Any]) -> _Parameters:
    context, *parameters = inspect.signature(function).parameters.values()
    kinds = {parameter.kind for parameter in parameters}
    keywordable = {inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY}
    return _Parameters(
        context=context.name,
        names=frozenset(p.name for p in parameters if p.kind in keywordable),
        required=frozenset(p.name for p in parameters if p.kind in keywordable and p.default is p.empty),
        any_keyword=inspect.Parameter.VAR_KEYWORD in kinds,
        plain=kinds <= keywordable | {inspect.Parameter.VAR_KEYWORD},
    )


def tool_continues_as_task(tool: Tool, *, registry: PythonRegistry = default_registry) -> bool:
    """Whether the tool's function asks first and then continues as a task by itself."""
    return registry.tool_continues_as_task(str(tool.config.get("function", "")))


async def template_read(
    template: ResourceTemplate,
    uri: str,
    variables: dict[str, str],
    ctx: ToolContext,
    *,
    registry: PythonRegistry = default_registry,
) -> list[JSONObject]:
    """Call ``fn(ctx, uri, **variables)``; contents without a MIME type get the template's.

    Raises ``UnknownPythonFunction`` when the function is gone and ``TypeError`` for a malformed return.
    """
    function = registry.get_resource_template(template.config["function"])
    contents = await function(ctx, uri, **variables)
    if not isinstance(contents, list) or not all(isinstance(c, dict) and "uri" in c for c in contents):
        raise TypeError(f"resource template function {template.config['function']!r} must return [{{uri, ...}}]")
    if template.mime_type:
        contents = [c if "mimeType" in c else {**c, "mimeType": template.mime_type} for c in contents]
    return contents


async def prompt_render(
    prompt: Prompt, arguments: dict[str, str], ctx: ToolContext, *, registry: PythonRegistry = default_registry
) -> JSONObject:
    """Call ``fn(ctx, **arguments)`` with the declared arguments the client gave (others are ignored, as static
    prompts ignore them); its value through ``mcp_core.content.prompt_result``.

    Raises ``UnknownPythonFunction`` when the function is gone and ``TypeError`` for a malformed return.
    """
    name = prompt.config["function"]
    function = registry.get_prompt(name)
    declared = {argument["name"] for argument in prompt.arguments}
    value = await function(ctx, **{key: value for key, value in arguments.items() if key in declared})
    try:
        return prompt_result(value)
    except TypeError as exc:
        raise TypeError(f"prompt function {name!r} returned a malformed prompt: {exc}") from None
