"""The seam between the protocol and whatever stores a server's tools, resources and prompts.

The shell implements ``Catalog`` (for this platform: one tenant's catalog in the database); the feature
modules call it. Definitions cross the seam as wire-shaped dicts so no translation sits on the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp_core.caching import CacheHints
from mcp_core.context import ToolContext
from mcp_core.tasks import TaskSupport

JSONObject = dict[str, Any]


@dataclass(frozen=True)
class Page:
    """One page of a list: wire-shaped items ordered by ``key`` and whether more follow the last one.

    ``cache``: what the list's own sources allowed (an upstream's hints for this list kind); the result never
    promises a longer life or a wider scope. None: only the server's hints apply.
    """

    items: list[JSONObject]
    has_more: bool
    last_key: str | None = None
    cache: CacheHints | None = None


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as the protocol needs it: its wire definition plus an opaque handle for the shell, and whether its
    calls run as tasks (``continues_as_task``: the tool asks its questions first, then continues as a task).

    ``validators`` remembers the compiled schemas of this definition, so a shell that hands out the same
    definition again (a cache keyed by the catalog's revision) compiles and serialises each schema once.
    """

    wire: JSONObject
    handle: Any = None
    task_support: TaskSupport = TaskSupport.FORBIDDEN
    continues_as_task: bool = False
    validators: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class TemplateMatch:
    """A resource template whose ``uriTemplate`` matched a URI, with the extracted variables."""

    wire: JSONObject
    variables: dict[str, str]
    handle: Any = None


@dataclass(frozen=True)
class PromptDefinition:
    """A prompt as the protocol needs it: its wire definition, an opaque handle for the shell, and its stored
    messages when it has any (prompts rendered by code have none)."""

    wire: JSONObject
    handle: Any = None
    messages: list[JSONObject] = field(default_factory=list)


class Catalog(Protocol):
    """What one MCP server offers. ``after`` is the key of the last item of the previous page (or None)."""

    async def list_tools(self, *, after: str | None, limit: int) -> Page: ...

    async def get_tool(self, name: str) -> ToolDefinition | None: ...

    async def invoke_tool(self, tool: ToolDefinition, arguments: JSONObject, ctx: ToolContext) -> Any:
        """Run the tool; return a value for ``content.tool_result`` or raise ``ToolError``."""
        ...

    async def list_resources(self, *, after: str | None, limit: int) -> Page: ...

    async def read_resource(self, uri: str, ctx: ToolContext) -> list[JSONObject] | None:
        """The contents of a concrete resource or of a templated one; None when nothing matches."""
        ...

    async def list_resource_templates(self, *, after: str | None, limit: int) -> Page: ...

    async def list_prompts(self, *, after: str | None, limit: int) -> Page: ...

    async def get_prompt(self, name: str) -> PromptDefinition | None: ...

    async def render_prompt(self, prompt: PromptDefinition, arguments: dict[str, str], ctx: ToolContext) -> JSONObject:
        """``{messages, description?}`` for these arguments (required ones already checked). A prompt rendered by
        code may ask the client through ``ctx`` as a tool does; raises ``PromptError`` and whatever it raises."""
        ...

    async def complete(self, ref: JSONObject, argument: JSONObject, context: JSONObject) -> list[str] | None:
        """Candidate values for the argument (the protocol filters and caps them); None if ref is unknown."""
        ...
