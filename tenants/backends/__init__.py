"""Backends: how a tool call, a resource read or a prompt is carried out, chosen by the entry's ``backend``.

Each backend lives in its own module and implements ``tenants.backends.base.CatalogBackend``; the registry
(``tenants.backends.plugs``) maps the ``Backend`` choice to it, and these functions dispatch through the registry.
They hand back the backend's coroutine rather than awaiting it in one of their own: the dispatch is a dict lookup.
An entry whose backend is not registered raises ``UnknownBackend`` (a ``ValueError``).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from mcp_core.context import ToolContext
from tenants.backends.plugs import BACKENDS, backend_of, resource_backend, unknown_backend
from tenants.models import Prompt, Resource, ResourceTemplate, Tool

JSONObject = dict[str, Any]


def tool_invoke(tool: Tool, arguments: JSONObject, ctx: ToolContext) -> Coroutine[Any, Any, Any]:
    """Run ``tool``; the value goes through ``mcp_core.content.tool_result``. Tools raise ``ToolError``."""
    try:  # ``backend_of``, written out on the path every call takes
        backend = BACKENDS[tool.backend]
    except KeyError:
        raise unknown_backend(tool) from None
    return backend.tool_invoke(tool, arguments, ctx)


def resource_read(resource: Resource, ctx: ToolContext) -> Coroutine[Any, Any, list[JSONObject] | None]:
    """The contents of a resource its backend produces (one mirrored from an upstream is read there); None for a
    stored one."""
    return resource_backend(resource).resource_read(resource, ctx)


def tool_continues_as_task(tool: Tool) -> bool:
    """Whether calls run in the request until the tool calls ``continue_as_task()`` (Python tools may)."""
    backend = BACKENDS.get(tool.backend)
    return backend is not None and backend.tool_continues_as_task(tool)


def template_read(
    template: ResourceTemplate, uri: str, variables: dict[str, str], ctx: ToolContext
) -> Coroutine[Any, Any, list[JSONObject]]:
    """The contents of ``uri``, which matched ``template`` with ``variables``."""
    return backend_of(template).template_read(template, uri, variables, ctx)


def prompt_render(prompt: Prompt, arguments: dict[str, str], ctx: ToolContext) -> Coroutine[Any, Any, JSONObject]:
    """``{messages, description?}`` of ``prompt`` for ``arguments``. Prompt functions raise ``PromptError``."""
    return backend_of(prompt).prompt_render(prompt, arguments, ctx)
