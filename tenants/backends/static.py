"""The static backend: a tool that always returns the stored result, a template that fills in stored text, a
prompt whose stored messages get their ``{{argument}}`` placeholders filled in; and the checks of what is stored."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from referencing.exceptions import Unresolvable

from mcp_core.content import prompt_message_problem, validate_content_item
from mcp_core.context import ToolContext
from mcp_core.schema_check import offline_validator
from tenants import rendering
from tenants.backends.base import PROMPTS, TEMPLATES, TOOLS, CatalogBackend, Errors
from tenants.models import Backend, Prompt, ResourceTemplate, Tool

JSONObject = dict[str, Any]

STATIC_TOOL_KEYS = frozenset({"content", "isError", "structuredContent"})


def _copy(value: Any) -> Any:
    """A deep copy of stored JSON: through orjson (0.6 us for a text content against 3.7 for ``copy.deepcopy``),
    or ``deepcopy`` for what orjson does not take (an integer beyond 64 bits)."""
    try:
        return orjson.loads(orjson.dumps(value))
    except orjson.JSONEncodeError:
        return copy.deepcopy(value)


def tool_invoke(tool: Tool) -> JSONObject:
    """The stored ``CallToolResult``: ``content``, ``isError`` when true, ``structuredContent`` when set."""
    config = tool.config
    # A copy: whatever the caller does with the result must not reach the model instance.
    result: JSONObject = {"content": _copy(config.get("content", []))}
    if config.get("isError"):
        result["isError"] = True
    if config.get("structuredContent") is not None:
        result["structuredContent"] = _copy(config["structuredContent"])
    return result


def template_read(template: ResourceTemplate, uri: str, variables: dict[str, str]) -> list[JSONObject]:
    """One text content for ``uri``: the stored text with each ``{variable}`` replaced by its value."""
    content: JSONObject = {"uri": uri}
    if template.mime_type:
        content["mimeType"] = template.mime_type
    content["text"] = rendering.template_text_render(template.config.get("text", ""), variables)
    return [content]


def prompt_render(prompt: Prompt, arguments: dict[str, str]) -> JSONObject:
    """``{messages}``: the stored messages with each declared argument's value substituted."""
    names = [argument["name"] for argument in prompt.arguments]
    return {"messages": rendering.prompt_render(prompt.messages, arguments, argument_names=names)}


def tool_config_errors(config: Any, output_schema: Any) -> list[str]:
    """Why ``config`` is not a stored ``CallToolResult`` that matches ``output_schema`` (None: not checked)."""
    if not isinstance(config, dict):
        return ["A static tool's config must be an object."]
    problems = [f"Unknown key {key!r} in a static tool's config." for key in sorted(set(config) - STATIC_TOOL_KEYS)]
    content = config.get("content")
    if not isinstance(content, list):
        problems.append('A static tool\'s config needs "content": a list of content items.')
    else:
        for index, item in enumerate(content):
            reason = validate_content_item(item)
            if reason is not None:
                problems.append(f"content[{index}]: {reason}.")
    is_error = config.get("isError", False)
    if not isinstance(is_error, bool):
        problems.append('"isError" must be true or false.')
    structured = config.get("structuredContent")
    if structured is not None and not isinstance(structured, dict):
        problems.append('"structuredContent" must be an object.')
    if isinstance(output_schema, dict) and not is_error and not problems:
        if structured is None:
            problems.append('A tool with an output schema must return "structuredContent".')
        else:
            try:
                for error in offline_validator(output_schema).iter_errors(structured):
                    problems.append(f"structuredContent does not match the output schema: {error.message}")
            except Unresolvable as exc:
                problems.append(f"The output schema refers to {exc.ref!r}, which is not part of it.")
    return problems


def message_errors(messages: Any, argument_names: set[str]) -> list[str]:
    """Why ``messages`` are not a prompt's messages whose placeholders all name declared arguments."""
    if not isinstance(messages, list) or not messages:
        return ["Messages must be a non-empty list of {role, content} objects."]
    problems = []
    for index, message in enumerate(messages):
        problem = prompt_message_problem(message, f"messages[{index}]")
        if problem is not None:
            problems.append(f"{problem}.")
            if not isinstance(message, dict) or "content" not in message:
                continue
        for name in sorted(rendering.prompt_placeholders(message["content"]) - argument_names):
            problems.append(f"messages[{index}] uses {{{{{name}}}}} but the prompt declares no argument {name!r}.")
    return problems


class StaticBackend(CatalogBackend):
    """Everything is stored on the entry: the result, the template's text, the prompt's messages."""

    choice = Backend.STATIC
    title = "static"
    serves = (TOOLS, TEMPLATES, PROMPTS)
    admin_form = (
        "tenants.admin.backend_forms.static.StaticSectionForm",
        "tenants.admin.backend_forms.static.StaticTemplateSectionForm",
    )

    async def tool_invoke(self, tool: Tool, arguments: JSONObject, ctx: ToolContext) -> JSONObject:
        return tool_invoke(tool)

    async def template_read(
        self, template: ResourceTemplate, uri: str, variables: dict[str, str], ctx: ToolContext
    ) -> list[JSONObject]:
        return template_read(template, uri, variables)

    async def prompt_render(self, prompt: Prompt, arguments: dict[str, str], ctx: ToolContext) -> JSONObject:
        return prompt_render(prompt, arguments)

    def tool_config_errors(self, tool: Tool, *, found: Errors) -> Errors:
        # An output schema that is itself wrong is reported once, not again as every result's mismatch.
        output_schema = tool.output_schema if "output_schema" not in found else None
        return {"config": tool_config_errors(tool.config, output_schema)}

    def template_config_errors(self, template: ResourceTemplate) -> Errors:
        config = template.config
        if not isinstance(config, dict) or set(config) != {"text"} or not isinstance(config["text"], str):
            return {"config": ['A static template needs config {"text": "... {variable} ..."} and nothing else.']}
        return {}

    def prompt_config_errors(self, prompt: Prompt, *, argument_names: set[str]) -> Errors:
        errors: Errors = {}
        if prompt.config:
            errors["config"] = ["A static prompt takes no config: its messages are the prompt."]
        errors["messages"] = message_errors(prompt.messages, argument_names)
        return errors
