"""The upstream backend as a plug: tools, templates, resources and prompts mirrored from an upstream MCP server and
proxied to it. The proxying lives with the rest of the federation (``tenants.federation.backend``); this module
holds what every backend declares (its calls, its configuration check).

It is a module of its own because the federation reaches into this package (HTTP auth for upstream connections):
the registry refers to ``tenants.federation.backend`` only when a call is made, so either side may be imported first.
"""

from __future__ import annotations

from typing import Any

from mcp_core.context import ToolContext
from tenants.backends.base import PROMPTS, TEMPLATES, TOOLS, CatalogBackend, Errors
from tenants.federation import backend as federation
from tenants.models import Backend, Prompt, Resource, ResourceTemplate, Tool

JSONObject = dict[str, Any]


def mirrored_item_errors(item: Tool | ResourceTemplate | Prompt) -> list[str]:
    """An item mirrored from an upstream: it names its upstream and the upstream's own definition."""
    config = item.config
    if item.upstream_id is None:
        return ["Only items mirrored from an upstream MCP server use the upstream backend."]
    if not isinstance(config, dict) or not isinstance(config.get("remote"), dict):
        return ['An upstream item needs config {"remote": {...the upstream\'s definition...}, "mirrored": {...}}.']
    if not isinstance(config["remote"].get("name"), str):
        return ["The upstream definition in config.remote has no name."]
    return []


class UpstreamBackend(CatalogBackend):
    """Items are written by the mirror (``tenants.federation.mirror``), never by hand: the check only makes sure an
    item names its upstream and the upstream's definition. A call that runs as a platform task becomes the
    upstream's own task where the upstream offers tasks (``tenants.federation.remote_tasks``)."""

    choice = Backend.UPSTREAM
    title = "upstream"
    serves = (TOOLS, TEMPLATES, PROMPTS)

    async def tool_invoke(self, tool: Tool, arguments: JSONObject, ctx: ToolContext) -> JSONObject:
        return await federation.tool_invoke(tool, arguments, ctx)

    async def template_read(
        self, template: ResourceTemplate, uri: str, variables: dict[str, str], ctx: ToolContext
    ) -> list[JSONObject]:
        return await federation.template_read(template, uri, ctx)

    async def resource_read(self, resource: Resource, ctx: ToolContext) -> list[JSONObject] | None:
        return await federation.resource_read(resource, ctx)

    async def prompt_render(self, prompt: Prompt, arguments: dict[str, str], ctx: ToolContext) -> JSONObject:
        return await federation.prompt_render(prompt, arguments, ctx)

    def tool_config_errors(self, tool: Tool, *, found: Errors) -> Errors:
        return {"config": mirrored_item_errors(tool)}

    def template_config_errors(self, template: ResourceTemplate) -> Errors:
        return {"config": mirrored_item_errors(template)}

    def prompt_config_errors(self, prompt: Prompt, *, argument_names: set[str]) -> Errors:
        errors = {"config": mirrored_item_errors(prompt)}
        if prompt.messages:
            errors["messages"] = ["An upstream prompt's messages come from the upstream: leave them empty."]
        return errors
