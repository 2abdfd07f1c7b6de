"""The Python backend: tools, resource templates and prompts implemented by functions in the Python function
registry (``tenants.backends.registry``), bound by name where platform staff granted the function to the tenant."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from mcp_core.content import prompt_result
from mcp_core.context import ToolContext
from mcp_core.errors import ToolError
from tenants.backends.base import PROMPTS, TEMPLATES, TOOLS, CatalogBackend, Errors
from tenants.backends.python_grants import python_function_binding_problem
from tenants.backends.registry import PythonRegistry, UnknownPythonFunction, default_registry
from tenants.models import Backend, Prompt, ResourceTemplate, Tool

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


def function_config_errors(
    config: Any, lookup: Callable[[str], object], *, tenant_id: int | None, registry: PythonRegistry
) -> list[str]:
    """Why ``config`` does not bind a registered function of the right kind (``lookup``) that the tenant may bind."""
    if not isinstance(config, dict) or set(config) != {"function"} or not isinstance(config["function"], str):
        return ['A Python backend needs config {"function": "<registered name>"} and nothing else.']
    try:
        lookup(config["function"])
    except UnknownPythonFunction as exc:
        return [str(exc)]
    problem = python_function_binding_problem(tenant_id=tenant_id, function=config["function"], registry=registry)
    return [problem] if problem else []


class PythonBackend(CatalogBackend):
    """Entries name a function of ``registry``; a tool's function may ask first and then continue as a task."""

    choice = Backend.PYTHON
    title = "Python"
    serves = (TOOLS, TEMPLATES, PROMPTS)
    admin_form = "tenants.admin.python_functions.PythonFunctionForm"

    def __init__(self, registry: PythonRegistry = default_registry) -> None:
        self.registry = registry

    def tool_invoke(self, tool: Tool, arguments: JSONObject, ctx: ToolContext) -> Coroutine[Any, Any, Any]:
        # The function's own coroutine, not one of ours around it: this is the hot path of small tools.
        return tool_invoke(tool, arguments, ctx, registry=self.registry)

    def tool_continues_as_task(self, tool: Tool) -> bool:
        return tool_continues_as_task(tool, registry=self.registry)

    async def template_read(
        self, template: ResourceTemplate, uri: str, variables: dict[str, str], ctx: ToolContext
    ) -> list[JSONObject]:
        return await template_read(template, uri, variables, ctx, registry=self.registry)

    async def prompt_render(self, prompt: Prompt, arguments: dict[str, str], ctx: ToolContext) -> JSONObject:
        return await prompt_render(prompt, arguments, ctx, registry=self.registry)

    def tool_config_errors(self, tool: Tool, *, found: Errors) -> Errors:
        return {"config": self._function_errors(tool, self.registry.get_tool)}

    def template_config_errors(self, template: ResourceTemplate) -> Errors:
        return {"config": self._function_errors(template, self.registry.get_resource_template)}

    def prompt_config_errors(self, prompt: Prompt, *, argument_names: set[str]) -> Errors:
        errors = {"config": self._function_errors(prompt, self.registry.get_prompt)}
        if prompt.messages:
            errors["messages"] = ["A Python prompt's messages come from its function: leave them empty."]
        return errors

    def _function_errors(self, entry: Tool | ResourceTemplate | Prompt, lookup: Callable[[str], object]) -> list[str]:
        return function_config_errors(entry.config, lookup, tenant_id=entry.tenant_id, registry=self.registry)
