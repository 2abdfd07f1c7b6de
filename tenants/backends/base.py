"""What a backend is: the one protocol every backend implements, so that the dispatcher (``tenants.backends``), the
validation (``tenants.validation``) and the admin reach each backend the same way and none of them lists backends.

A backend runs a tool, reads a templated (or mirrored) resource, renders a prompt, says whether a call continues as
a task, checks its own configuration and names its admin form. The registry, ``tenants.backends.plugs``, maps each
``Backend`` choice to one instance of a subclass of ``CatalogBackend``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mcp_core.context import ToolContext
from tenants.models import Prompt, Resource, ResourceTemplate, Tool

JSONObject = dict[str, Any]
# Configuration errors by model field, as ``django.core.exceptions.ValidationError`` takes them.
Errors = dict[str, list[str]]

TOOLS = "tools"
TEMPLATES = "resource templates"
PROMPTS = "prompts"


class CatalogBackend:
    """One backend. Subclasses override the methods of what they serve (``serves``); the defaults say that an
    entry of another kind cannot use the backend.

    Calls of any backend may run as MCP tasks on a worker (``Tool.task_support``): the worker calls the same
    ``tool_invoke``, with a ``ToolContext`` that reaches the client through the task. A backend changes how its
    calls become tasks only through ``tool_continues_as_task``.
    """

    # The ``Backend`` choice this backend implements, and how messages name it.
    choice: ClassVar[str]
    title: ClassVar[str]
    serves: ClassVar[tuple[str, ...]] = ()
    # The import path of this backend's section of the tool, template and prompt admin forms (a
    # ``tenants.admin.backend_forms.base.BackendSectionForm``: fields that edit its config, shown when the backend is
    # chosen), or a tuple of them where the kinds of entry differ (one section per kind); None where the backend has
    # no section (upstream items are mirrored, not written by hand).
    admin_form: ClassVar[str | tuple[str, ...] | None] = None
    # Whether a person may choose this backend on the admin's forms (False where entries are made by the platform,
    # as the federation makes mirrored items).
    chosen_by_hand: ClassVar[bool] = True

    async def tool_invoke(self, tool: Tool, arguments: JSONObject, ctx: ToolContext) -> Any:
        """Run ``tool``; the value goes through ``mcp_core.content.tool_result``. Tools raise ``ToolError``."""
        raise ValueError(self.not_served(TOOLS))

    def tool_continues_as_task(self, tool: Tool) -> bool:
        """Whether a call that may be a task first runs in the request until the tool calls
        ``ctx.continue_as_task()`` (its questions asked there), rather than becoming a task at once."""
        return False

    async def template_read(
        self, template: ResourceTemplate, uri: str, variables: dict[str, str], ctx: ToolContext
    ) -> list[JSONObject]:
        """The contents of ``uri``, which matched ``template`` with ``variables``."""
        raise ValueError(self.not_served(TEMPLATES))

    async def resource_read(self, resource: Resource, ctx: ToolContext) -> list[JSONObject] | None:
        """The contents of a concrete resource this backend produces, or None: the stored contents are served."""
        return None

    async def prompt_render(self, prompt: Prompt, arguments: dict[str, str], ctx: ToolContext) -> JSONObject:
        """``{messages, description?}`` of ``prompt`` for ``arguments``. Prompt functions raise ``PromptError``."""
        raise ValueError(self.not_served(PROMPTS))

    def tool_config_errors(self, tool: Tool, *, found: Errors) -> Errors:
        """What is wrong with ``tool``'s configuration for this backend, by field (nothing: empty). ``found`` holds
        what the common checks found (a backend may skip a check that builds on a field already wrong)."""
        return {"backend": [self.not_served(TOOLS)]}

    def template_config_errors(self, template: ResourceTemplate) -> Errors:
        """What is wrong with ``template``'s configuration for this backend, by field."""
        return {"backend": [self.not_served(TEMPLATES)]}

    def prompt_config_errors(self, prompt: Prompt, *, argument_names: set[str]) -> Errors:
        """What is wrong with ``prompt``'s configuration (and messages) for this backend, by field;
        ``argument_names`` are the names the prompt declares."""
        return {"backend": [self.not_served(PROMPTS)]}

    def secret_names(self, config: Any) -> list[str]:
        """The tenant secrets ``config`` names (the admin checks they exist and shows where a secret is used)."""
        return []

    def not_served(self, kind: str) -> str:
        served = " and ".join(self.serves) or "nothing"
        return f"The {self.title} backend serves no {kind}: it is for {served}."
