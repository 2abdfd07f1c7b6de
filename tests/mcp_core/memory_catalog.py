"""An in-memory ``Catalog``: a complete implementation of the seam for testing the protocol without a database."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp_core.catalog import Page, PromptDefinition, ToolDefinition
from mcp_core.content import prompt_result
from mcp_core.context import ToolContext
from mcp_core.uritemplate import UriTemplate
from tests.support import RecordingOutbound  # noqa: F401  (re-exported for the tests)

ToolFn = Callable[..., Awaitable[Any]]


class MemoryCatalog:
    def __init__(self) -> None:
        self.tools: dict[str, tuple[dict[str, Any], ToolFn]] = {}
        self.resources: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        self.templates: dict[str, dict[str, Any]] = {}
        self.prompts: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        self.prompt_functions: dict[str, ToolFn] = {}
        self.completions: dict[str, list[str]] = {}

    def add_tool(self, wire: dict[str, Any], fn: ToolFn) -> None:
        self.tools[wire["name"]] = (wire, fn)

    def add_prompt_function(self, wire: dict[str, Any], fn: ToolFn) -> None:
        """A prompt rendered by ``fn(ctx, **arguments)``, returning what ``content.prompt_result`` accepts."""
        self.prompts[wire["name"]] = (wire, [])
        self.prompt_functions[wire["name"]] = fn

    @staticmethod
    def _page(items: dict[str, Any], after: str | None, limit: int) -> Page:
        keys = sorted(k for k in items if after is None or k > after)
        chosen = keys[:limit]
        return Page([items[k] for k in chosen], len(keys) > limit, chosen[-1] if chosen else None)

    async def list_tools(self, *, after: str | None, limit: int) -> Page:
        return self._page({k: v[0] for k, v in self.tools.items()}, after, limit)

    async def get_tool(self, name: str) -> ToolDefinition | None:
        entry = self.tools.get(name)
        return ToolDefinition(entry[0], entry[1]) if entry else None

    async def invoke_tool(self, tool: ToolDefinition, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        return await tool.handle(ctx, **arguments)

    async def list_resources(self, *, after: str | None, limit: int) -> Page:
        return self._page({k: v[0] for k, v in self.resources.items()}, after, limit)

    async def read_resource(self, uri: str, ctx: ToolContext) -> list[dict[str, Any]] | None:
        if uri in self.resources:
            return self.resources[uri][1]
        for wire in self.templates.values():
            variables = UriTemplate.parse(wire["uriTemplate"]).match(uri)
            if variables is not None:
                return [{"uri": uri, "text": repr(sorted(variables.items()))}]
        return None

    async def list_resource_templates(self, *, after: str | None, limit: int) -> Page:
        return self._page(self.templates, after, limit)

    async def list_prompts(self, *, after: str | None, limit: int) -> Page:
        return self._page({k: v[0] for k, v in self.prompts.items()}, after, limit)

    async def get_prompt(self, name: str) -> PromptDefinition | None:
        entry = self.prompts.get(name)
        return PromptDefinition(entry[0], self.prompt_functions.get(name), entry[1]) if entry else None

    async def render_prompt(
        self, prompt: PromptDefinition, arguments: dict[str, str], ctx: ToolContext
    ) -> dict[str, Any]:
        if prompt.handle is not None:
            return prompt_result(await prompt.handle(ctx, **arguments))
        rendered = []
        for message in prompt.messages:
            text = message["content"]["text"]
            for key, value in arguments.items():
                text = text.replace("{{" + key + "}}", value)
            rendered.append({"role": message["role"], "content": {"type": "text", "text": text}})
        return {"messages": rendered}

    async def complete(
        self, ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any]
    ) -> list[str] | None:
        key = ref.get("name") or ref.get("uri")
        if key not in self.prompts and key not in self.templates:
            return None
        values = self.completions.get(f"{key}:{argument['name']}", [])
        return [v for v in values if v.startswith(argument.get("value", ""))]
