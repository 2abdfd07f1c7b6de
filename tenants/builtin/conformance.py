"""Python functions behind the conformance tenant's fixtures, mirroring the suite's reference server.

The reference is ``examples/servers/typescript/everything-server.ts`` of modelcontextprotocol/conformance
(0.1.16; the ``test_input_required_result_*`` fixtures from 0.2.0-alpha); texts, schemas and input keys here
must stay identical to it. The MRTR fixtures are ordinary tools and prompts: in the handshake era their
questions become server-to-client requests.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from asgiref.sync import sync_to_async

from mcp_core.context import ToolContext
from mcp_core.errors import ClientRequestFailed, ToolError
from tenants import events
from tenants.backends.registry import default_registry, python_prompt, python_resource_template, python_tool
from tenants.builtin.conformance_fixtures import CONFORMANCE
from tenants.models import Tenant

default_registry.reserve_package("conformance", tenants=(CONFORMANCE.slug,))

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


# ---- 2026-07-28 multi-round-trip requests (SEP-2322) -------------------------------------------------------


def _string_schema(field: str) -> JSONObject:
    return {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}


CONFIRM_SCHEMA: JSONObject = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _answer_text(answer: JSONObject, field: str) -> str:
    content = answer.get("content")
    value = content.get(field) if isinstance(content, dict) else None
    return value if isinstance(value, str) else "unknown"


def _sampled_or(answer: JSONObject, fallback: str) -> str:
    text = _sampled_text(answer)
    return fallback if text == "No response" else text


def _user(text: str) -> list[JSONObject]:
    return [{"role": "user", "content": {"type": "text", "text": text}}]


@python_tool("conformance.input_required_elicitation")
async def input_required_elicitation(ctx: ToolContext) -> str:
    answer = await ctx.elicit("What is your name?", _string_schema("name"), key="user_name")
    return f"Hello, {_answer_text(answer, 'name')}!"


@python_tool("conformance.input_required_sampling")
async def input_required_sampling(ctx: ToolContext) -> str:
    answer = await ctx.sample(_user("What is the capital of France?"), 100, key="sample_request")
    return f"Sampling result: {_sampled_or(answer, 'no response')}"


@python_tool("conformance.input_required_list_roots")
async def input_required_list_roots(ctx: ToolContext) -> str:
    roots = await ctx.list_roots(key="roots_request")
    return f"Found {len(roots)} root(s)"


@python_tool("conformance.input_required_request_state")
async def input_required_request_state(ctx: ToolContext) -> str:
    answer = await ctx.elicit("Please confirm", CONFIRM_SCHEMA, key="confirm")
    confirmed = isinstance(answer.get("content"), dict) and answer["content"].get("ok") is True
    return "state-ok: requestState validated" if confirmed else "Not confirmed"


@python_tool("conformance.input_required_multiple_inputs")
async def input_required_multiple_inputs(ctx: ToolContext) -> str:
    name, greeting, roots = await asyncio.gather(
        ctx.elicit("What is your name?", _string_schema("name"), key="user_name"),
        ctx.sample(_user("Generate a greeting"), 50, key="greeting"),
        ctx.list_roots(key="client_roots"),
    )
    return f"Name: {_answer_text(name, 'name')}; Greeting: {_sampled_or(greeting, 'Hello there!')}; Roots: {len(roots)}"


@python_tool("conformance.input_required_multi_round")
async def input_required_multi_round(ctx: ToolContext) -> str:
    name = await ctx.elicit("Step 1: What is your name?", _string_schema("name"), key="step1")
    color = await ctx.elicit("Step 2: What is your favorite color?", _string_schema("color"), key="step2")
    return f"Multi-round complete for {_answer_text(name, 'name')} who likes {_answer_text(color, 'color')}"


@python_tool("conformance.input_required_tampered_state")
async def input_required_tampered_state(ctx: ToolContext) -> str:
    await ctx.elicit("Please confirm", CONFIRM_SCHEMA, key="confirm")
    return "integrity-ok: state verified"


@python_tool("conformance.input_required_capabilities")
async def input_required_capabilities(ctx: ToolContext) -> str:
    questions: dict[str, Any] = {}
    if ctx.client_declares("elicitation"):
        questions["elicit_input"] = ctx.elicit("Elicitation input", _string_schema("value"), key="elicit_input")
    if ctx.client_declares("sampling"):
        questions["sample_input"] = ctx.sample(_user("Sample request"), 50, key="sample_input")
    if not questions:
        return "No supported capabilities declared"
    await asyncio.gather(*questions.values())
    return f"capabilities-ok: received {','.join(questions)}"


@python_prompt("conformance.input_required_prompt")
async def input_required_prompt(ctx: ToolContext) -> list[JSONObject]:
    # MRTR is not only for tools: prompts/get may answer input_required too (input-required-result-non-tool-request).
    answer = await ctx.elicit("What context should the prompt use?", _string_schema("context"), key="user_context")
    return _user(f"Prompt with context: {_answer_text(answer, 'context')}")


# ---- 2026-07-28 subscriptions/listen diagnostic hooks --------------------------------------------------------


async def _announce_change(kind: events.CatalogKind) -> str:
    # The suite's hooks only need a list-changed notification; nothing is edited, so listeners re-read an
    # unchanged list. The conformance tenant is the only one these functions are registered for.
    tenant = await Tenant.objects.aget(slug=CONFORMANCE.slug)
    await sync_to_async(events.catalog_changed)(tenant_id=tenant.pk, kind=kind)
    return "Mutation triggered"


@python_tool("conformance.trigger_tool_change")
async def trigger_tool_change(ctx: ToolContext) -> str:
    return await _announce_change("tools")


@python_tool("conformance.trigger_prompt_change")
async def trigger_prompt_change(ctx: ToolContext) -> str:
    return await _announce_change("prompts")


@python_resource_template("conformance.template_data")
async def template_data(ctx: ToolContext, uri: str, id: str) -> list[JSONObject]:
    body = {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}
    return [{"uri": uri, "mimeType": "application/json", "text": js_json(body)}]
