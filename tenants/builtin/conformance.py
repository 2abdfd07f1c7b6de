"""Python functions behind the conformance tenant's fixtures, mirroring the suite's reference server.

The reference is ``examples/servers/typescript/everything-server.ts`` of modelcontextprotocol/conformance
(0.1.16); texts and schemas here must stay identical to it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp_core.context import ToolContext
from mcp_core.errors import ClientRequestFailed, ToolError
from tenants.backends.registry import python_resource_template, python_tool

JSONObject = dict[str, Any]

# The reference server waits this long between the notifications of its logging and progress tools.
STEP_DELAY_SECONDS = 0.05

ELICITATION_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"response": {"type": "string", "description": "User's response"}},
    "required": ["response"],
}

SEP1034_MESSAGE = "Please review and update the form fields with defaults"
SEP1034_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

SEP1330_MESSAGE = "Please select options from the enum fields"
SEP1330_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact separators, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@python_tool("conformance.tool_with_logging")
async def tool_with_logging(ctx: ToolContext) -> str:
    await ctx.log("info", "Tool execution started")
    await asyncio.sleep(STEP_DELAY_SECONDS)
    await ctx.log("info", "Tool processing data")
    await asyncio.sleep(STEP_DELAY_SECONDS)
    await ctx.log("info", "Tool execution completed")
    return "Tool with logging executed successfully"


@python_tool("conformance.tool_with_progress")
async def tool_with_progress(ctx: ToolContext) -> str:
    # The reference echoes the progress token; ToolContext does not expose it, and no check reads the text.
    for step in (0, 50, 100):
        if step:
            await asyncio.sleep(STEP_DELAY_SECONDS)
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
    return "Progress reported"


@python_tool("conformance.error_handling")
async def error_handling(ctx: ToolContext) -> str:
    raise ToolError("This tool intentionally returns an error for testing")


@python_tool("conformance.reconnection")
async def reconnection(ctx: ToolContext) -> str:
    # Close the client's stream mid-call (SEP-1699); the result arrives on the resumed stream.
    await ctx.release_connection()
    await asyncio.sleep(2 * STEP_DELAY_SECONDS)
    return (
        "Reconnection test completed successfully. If you received this, "
        "the client properly reconnected after stream closure."
    )


def _sampled_text(result: JSONObject) -> str:
    content = result.get("content")
    # Sampling results carry one content block, or a list of them since 2025-11-25.
    blocks = content if isinstance(content, list) else [content]
    for block in blocks:
        if isinstance(block, dict) and isinstance(block.get("text"), str) and block["text"]:
            return block["text"]
    message = result.get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), dict):
        text = message["content"].get("text")
        if isinstance(text, str) and text:
            return text
    return "No response"


@python_tool("conformance.sampling")
async def sampling(ctx: ToolContext, prompt: str) -> str:
    messages = [{"role": "user", "content": {"type": "text", "text": prompt}}]
    try:
        result = await ctx.sample(messages, 100)
    except ClientRequestFailed as exc:
        return f"Sampling not supported or error: {exc}"
    return f"LLM response: {_sampled_text(result)}"


async def _elicit(ctx: ToolContext, message: str, schema: JSONObject, prefix: str) -> str:
    try:
        result = await ctx.elicit(message, schema)
    except ClientRequestFailed as exc:
        return f"Elicitation not supported or error: {exc}"
    return f"{prefix}: action={result.get('action')}, content={js_json(result.get('content') or {})}"


@python_tool("conformance.elicitation")
async def elicitation(ctx: ToolContext, message: str) -> str:
    return await _elicit(ctx, message, ELICITATION_SCHEMA, "User response")


@python_tool("conformance.elicitation_sep1034_defaults")
async def elicitation_sep1034_defaults(ctx: ToolContext) -> str:
    return await _elicit(ctx, SEP1034_MESSAGE, SEP1034_SCHEMA, "Elicitation completed")


@python_tool("conformance.elicitation_sep1330_enums")
async def elicitation_sep1330_enums(ctx: ToolContext) -> str:
    return await _elicit(ctx, SEP1330_MESSAGE, SEP1330_SCHEMA, "Elicitation completed")


@python_tool("conformance.json_schema_2020_12")
async def json_schema_2020_12(ctx: ToolContext, **arguments: Any) -> str:
    return f"JSON Schema 2020-12 tool called with: {js_json(arguments)}"


@python_tool("conformance.missing_capability")
async def missing_capability(ctx: ToolContext) -> str:
    # Needs sampling: a 2026-07-28 client that did not declare it gets -32021 before anything runs on.
    await ctx.sample([{"role": "user", "content": {"type": "text", "text": "ping"}}], 10)
    return "Success"


@python_tool("conformance.logging_tool")
async def logging_tool(ctx: ToolContext) -> str:
    await ctx.log("info", "Diagnostic trace logging activated")
    return "Logging evaluated"


@python_tool("conformance.streaming_elicitation")
async def streaming_elicitation(ctx: ToolContext) -> str:
    await ctx.report_progress(50, 100)
    try:
        result = await ctx.elicit("Continue?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    except ClientRequestFailed as exc:
        return f"Streaming complete (no elicitation: {exc})"
    return f"Streaming complete: action={result.get('action')}"


@python_resource_template("conformance.template_data")
async def template_data(ctx: ToolContext, uri: str, id: str) -> list[JSONObject]:
    body = {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}
    return [{"uri": uri, "mimeType": "application/json", "text": js_json(body)}]
