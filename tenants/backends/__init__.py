"""Backends: how a tool call, a templated resource read or a prompt is carried out, chosen by ``backend``.

``tool_invoke``, ``template_read`` and ``prompt_render`` dispatch on the stored backend; each backend lives in
its own module.
"""

from __future__ import annotations

from typing import Any

from mcp_core.context import ToolContext
from tenants.backends import http, python, static
from tenants.federation import backend as upstream
from tenants.models import Backend, Prompt, Resource, ResourceTemplate, Tool

JSONObject = dict[str, Any]


async def tool_invoke(tool: Tool, arguments: JSONObject, ctx: ToolContext) -> Any:
    """Run ``tool``; the value goes through ``mcp_core.content.tool_result``. Tools raise ``ToolError``."""
    if tool.backend == Backend.PYTHON:
        return await python.tool_invoke(tool, arguments, ctx)
    if tool.backend == Backend.STATIC:
        return static.tool_invoke(tool)
    if tool.backend == Backend.UPSTREAM:
        return await upstream.tool_invoke(tool, arguments, ctx)
    if tool.backend == Backend.HTTP:
        return await http.tool_invoke(tool, arguments, ctx)
    raise ValueError(f"tool {tool.name!r} has unknown backend {tool.backend!r}")


async def resource_read(resource: Resource, ctx: ToolContext) -> list[JSONObject] | None:
    """The contents of a resource mirrored from an upstream (read there); None for a stored one."""
    if resource.upstream_id is not None:
        return await upstream.resource_read(resource, ctx)
    return None


def tool_continues_as_task(tool: Tool) -> bool:
    """Whether calls run in the request until the tool calls ``continue_as_task()`` (Python tools may)."""
    return tool.backend == Backend.PYTHON and python.tool_continues_as_task(tool)


async def template_read(
    template: ResourceTemplate, uri: str, variables: dict[str, str], ctx: ToolContext
) -> list[JSONObject]:
    """The contents of ``uri``, which matched ``template`` with ``variables``."""
    if template.backend == Backend.PYTHON:
        return await python.template_read(template, uri, variables, ctx)
    if template.backend == Backend.STATIC:
        return static.template_read(template, uri, variables)
    if template.backend == Backend.UPSTREAM:
        return await upstream.template_read(template, uri, ctx)
    raise ValueError(f"resource template {template.name!r} has unknown backend {template.backend!r}")


async def prompt_render(prompt: Prompt, arguments: dict[str, str], ctx: ToolContext) -> JSONObject:
    """``{messages, description?}`` of ``prompt`` for ``arguments``. Prompt functions raise ``PromptError``."""
    if prompt.backend == Backend.PYTHON:
        return await python.prompt_render(prompt, arguments, ctx)
    if prompt.backend == Backend.STATIC:
        return static.prompt_render(prompt, arguments)
    if prompt.backend == Backend.UPSTREAM:
        return await upstream.prompt_render(prompt, arguments, ctx)
    raise ValueError(f"prompt {prompt.name!r} has unknown backend {prompt.backend!r}")
