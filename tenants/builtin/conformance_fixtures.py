"""The conformance tenant's catalog as data: every fixture of the suite's reference "everything server".

Names, descriptions, schemas, URIs and texts are copied from ``everything-server.ts`` (conformance 0.1.16);
``load_conformance_tenant`` stores them through the services.
"""

from __future__ import annotations

import json
from typing import Any

from tenants.builtin.loading import CatalogSpec
from tenants.models import Backend, TaskSupport

JSONObject = dict[str, Any]

TEST_IMAGE_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

# SEP-1613 ($schema, $defs, additionalProperties) and SEP-2106 (allOf/anyOf, if/then/else, $anchor): kept byte
# for byte and served exactly as stored. The 0.2.0-alpha fixture (``JSON_SCHEMA_2020_12_FIXTURE``); 0.1.16 checks
# a subset of it.
JSON_SCHEMA_2020_12_INPUT_SCHEMA: JSONObject = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

NO_ARGUMENTS: JSONObject = {"type": "object", "properties": {}}


def _one_string(name: str, description: str) -> JSONObject:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    }


def _static(name: str, description: str, content: list[JSONObject]) -> JSONObject:
    return {
        "name": name,
        "description": description,
        "input_schema": NO_ARGUMENTS,
        "backend": Backend.STATIC,
        "config": {"content": content, "isError": False},
    }


def _python(
    name: str,
    description: str,
    function: str,
    input_schema: JSONObject = NO_ARGUMENTS,
    task_support: TaskSupport = TaskSupport.FORBIDDEN,
) -> JSONObject:
    return {
        "name": name,
        "description": description,
        "input_schema": input_schema,
        "backend": Backend.PYTHON,
        "config": {"function": function},
        "task_support": task_support,
    }


def _text(text: str) -> JSONObject:
    return {"type": "text", "text": text}


def _image() -> JSONObject:
    return {"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"}


TOOLS: list[JSONObject] = [
    _static(
        "test_simple_text",
        "Tests simple text content response",
        [_text("This is a simple text response for testing.")],
    ),
    _static("test_image_content", "Tests image content response", [_image()]),
    _static(
        "test_audio_content",
        "Tests audio content response",
        [{"type": "audio", "data": TEST_AUDIO_BASE64, "mimeType": "audio/wav"}],
    ),
    _static(
        "test_embedded_resource",
        "Tests embedded resource content response",
        [
            {
                "type": "resource",
                "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content.",
                },
            }
        ],
    ),
    _static(
        "test_multiple_content_types",
        "Tests response with multiple content types (text, image, resource)",
        [
            _text("Multiple content types test:"),
            _image(),
            {
                "type": "resource",
                "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
                },
            },
        ],
    ),
    _python(
        "test_tool_with_logging",
        "Tests tool that emits log messages during execution",
        "conformance.tool_with_logging",
    ),
    _python(
        "test_tool_with_progress",
        "Tests tool that reports progress notifications",
        "conformance.tool_with_progress",
    ),
    _python("test_error_handling", "Tests error response handling", "conformance.error_handling"),
    _python(
        "test_reconnection",
        "Tests SSE stream disconnection and client reconnection (SEP-1699). Server will close the stream "
        "mid-call and send the result after client reconnects.",
        "conformance.reconnection",
    ),
    _python(
        "test_sampling",
        "Tests server-initiated sampling (LLM completion request)",
        "conformance.sampling",
        _one_string("prompt", "The prompt to send to the LLM"),
    ),
    _python(
        "test_elicitation",
        "Tests server-initiated elicitation (user input request)",
        "conformance.elicitation",
        _one_string("message", "The message to show the user"),
    ),
    _python(
        "test_elicitation_sep1034_defaults",
        "Tests elicitation with default values per SEP-1034",
        "conformance.elicitation_sep1034_defaults",
    ),
    _python(
        "test_elicitation_sep1330_enums",
        "Tests elicitation with enum schema improvements per SEP-1330",
        "conformance.elicitation_sep1330_enums",
    ),
    # Diagnostic tools of the 2026-07-28 scenarios (server-stateless, http-custom-header-server-validation).
    _python("test_missing_capability", "Test tool requiring sampling", "conformance.missing_capability"),
    _python("test_logging_tool", "Diagnostic logging validator tool", "conformance.logging_tool"),
    _python(
        "test_streaming_elicitation",
        "Diagnostic tool validating response progress streams",
        "conformance.streaming_elicitation",
    ),
    {
        **_static("test_x_mcp_header", "Echoes a region mirrored into the Mcp-Param-Region header", [_text("ok")]),
        "input_schema": {
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"],
        },
    },
    # SEP-2322 multi-round-trip requests (server-input-required-result scenarios of 0.2.0-alpha).
    _python(
        "test_input_required_result_elicitation",
        "MRTR: returns InputRequiredResult with elicitation request",
        "conformance.input_required_elicitation",
    ),
    _python(
        "test_input_required_result_sampling",
        "MRTR: returns InputRequiredResult with sampling request",
        "conformance.input_required_sampling",
    ),
    _python(
        "test_input_required_result_list_roots",
        "MRTR: returns InputRequiredResult with roots/list request",
        "conformance.input_required_list_roots",
    ),
    _python(
        "test_input_required_result_request_state",
        "MRTR: returns InputRequiredResult with requestState",
        "conformance.input_required_request_state",
    ),
    _python(
        "test_input_required_result_multiple_inputs",
        "MRTR: returns InputRequiredResult with multiple input requests",
        "conformance.input_required_multiple_inputs",
    ),
    _python(
        "test_input_required_result_multi_round",
        "MRTR: multi-round InputRequiredResult workflow",
        "conformance.input_required_multi_round",
    ),
    _python(
        "test_input_required_result_tampered_state",
        "MRTR: HMAC-signed requestState integrity test",
        "conformance.input_required_tampered_state",
    ),
    _python(
        "test_input_required_result_capabilities",
        "MRTR: respects client capabilities in inputRequests",
        "conformance.input_required_capabilities",
    ),
    # subscriptions/listen hooks: announce a tools or prompts list change to the tenant's listeners.
    _python(
        "test_trigger_tool_change", "Triggers a tools list-changed notification", "conformance.trigger_tool_change"
    ),
    _python(
        "test_trigger_prompt_change",
        "Triggers a prompts list-changed notification",
        "conformance.trigger_prompt_change",
    ),
    _python(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
        "conformance.json_schema_2020_12",
        JSON_SCHEMA_2020_12_INPUT_SCHEMA,
    ),
    # Tasks (2026-07-28 extension and 2025-11-25): the fixtures the tasks-* scenarios call.
    _python("greet", "Says hello; never runs as a task", "conformance.greet", _one_string("name", "Who to greet")),
    _python(
        "slow_compute",
        "Sleeps for the given seconds, then answers; runs as a task when the client accepts tasks",
        "conformance.slow_compute",
        {
            "type": "object",
            "properties": {
                "seconds": {"type": "number", "minimum": 0, "maximum": 600, "description": "How long to work"},
                "label": {"type": "string", "description": "Names the computation in the result"},
            },
            "required": ["seconds"],
        },
        TaskSupport.OPTIONAL,
    ),
    _python(
        "failing_job",
        "Always ends in a tool execution error after about a second; runs only as a task",
        "conformance.failing_job",
        task_support=TaskSupport.REQUIRED,
    ),
    _python(
        "protocol_error_job",
        "Always ends in a JSON-RPC (protocol) error",
        "conformance.protocol_error_job",
        task_support=TaskSupport.OPTIONAL,
    ),
    _python(
        "confirm_delete",
        "Asks the user to confirm before deleting a file",
        "conformance.confirm_delete",
        _one_string("filename", "The file to delete"),
        TaskSupport.OPTIONAL,
    ),
    _python(
        "multi_input",
        "Asks the user two questions at once",
        "conformance.multi_input",
        task_support=TaskSupport.OPTIONAL,
    ),
    _python(
        "test_tool_with_task",
        "Asks for the user's name in the request, then finishes as a task",
        "conformance.tool_with_task",
        task_support=TaskSupport.REQUIRED,
    ),
]

RESOURCES: list[JSONObject] = [
    {
        "uri": "test://static-text",
        "name": "static-text",
        "title": "Static Text Resource",
        "description": "A static text resource for testing",
        "mime_type": "text/plain",
        "text": "This is the content of the static text resource.",
    },
    {
        "uri": "test://static-binary",
        "name": "static-binary",
        "title": "Static Binary Resource",
        "description": "A static binary resource (image) for testing",
        "mime_type": "image/png",
        "blob": TEST_IMAGE_BASE64,
    },
    {
        "uri": "test://watched-resource",
        "name": "watched-resource",
        "title": "Watched Resource",
        "description": "A resource that auto-updates every 3 seconds",
        "mime_type": "text/plain",
        "text": "Watched resource content",
    },
]

TEMPLATES: list[JSONObject] = [
    {
        "name": "template",
        "uri_template": "test://template/{id}/data",
        "title": "Resource Template",
        "description": "A resource template with parameter substitution",
        "mime_type": "application/json",
        "backend": Backend.PYTHON,
        "config": {"function": "conformance.template_data"},
        "completions": {"id": ["1", "2", "3", "42", "123"]},
    }
]

PROMPTS: list[JSONObject] = [
    {
        "name": "test_simple_prompt",
        "title": "Simple Test Prompt",
        "description": "A simple prompt without arguments",
        "messages": [{"role": "user", "content": _text("This is a simple prompt for testing.")}],
    },
    {
        "name": "test_prompt_with_arguments",
        "title": "Prompt With Arguments",
        "description": "A prompt with required arguments",
        "arguments": [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True},
        ],
        "completions": {
            "arg1": ["testValue1", "test", "example"],
            "arg2": ["testValue2", "test", "example"],
        },
        "messages": [{"role": "user", "content": _text("Prompt with arguments: arg1='{{arg1}}', arg2='{{arg2}}'")}],
    },
    {
        "name": "test_prompt_with_embedded_resource",
        "title": "Prompt With Embedded Resource",
        "description": "A prompt that includes an embedded resource",
        "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": True}],
        "completions": {"resourceUri": ["test://static-text", "test://static-binary", "test://watched-resource"]},
        "messages": [
            {
                "role": "user",
                "content": {
                    "type": "resource",
                    "resource": {
                        "uri": "{{resourceUri}}",
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    },
                },
            },
            {"role": "user", "content": _text("Please process the embedded resource above.")},
        ],
    },
    {
        "name": "test_prompt_with_image",
        "title": "Prompt With Image",
        "description": "A prompt that includes image content",
        "messages": [
            {"role": "user", "content": _image()},
            {"role": "user", "content": _text("Please analyze the image above.")},
        ],
    },
    # SEP-2322: prompts/get answers input_required too (0.2.0-alpha input-required-result-non-tool-request).
    {
        "name": "test_input_required_result_prompt",
        "description": "MRTR: prompt that requires elicitation input",
        "backend": Backend.PYTHON,
        "config": {"function": "conformance.input_required_prompt"},
    },
]

CONFORMANCE = CatalogSpec(
    slug="conformance",
    tenant={
        "name": "MCP conformance fixtures",
        "instructions": (
            "This server offers the fixtures of the official MCP conformance suite: test tools, resources "
            "and prompts whose names and texts match the suite's reference server."
        ),
        "requires_authorization": False,
    },
    tools=TOOLS,
    resources=RESOURCES,
    templates=TEMPLATES,
    prompts=PROMPTS,
)
