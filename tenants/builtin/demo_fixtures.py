"""The demo tenant's catalog as data: a few useful tools, a resource, a template and a prompt."""

from __future__ import annotations

from typing import Any

from tenants.builtin.loading import CatalogSpec
from tenants.models import Backend, TaskSupport

JSONObject = dict[str, Any]


def _python(
    name: str, title: str, description: str, function: str, input_schema: JSONObject, **extra: Any
) -> JSONObject:
    return {
        "name": name,
        "title": title,
        "description": description,
        "input_schema": input_schema,
        "backend": Backend.PYTHON,
        "config": {"function": function},
        **extra,
    }


NO_ARGUMENTS: JSONObject = {"type": "object", "properties": {}}

README = """# Demo tenant

This MCP server is hosted on the multi-tenant MCP platform. It shows what a tenant can offer:

- `echo` and `add`: plain tools (`add` also returns structured content);
- `count_slowly`: progress notifications while it works (a task, for clients that take tasks);
- `ask_user_name`: asks you a question through elicitation;
- `summarize`: asks your client's model for a summary (sampling);
- `list_client_roots`: lists the roots your client shares;
- `platform_info`: a static answer stored in the catalog;
- the `demo://greeting/{name}` template and the `code_review` prompt.
"""

TOOLS: list[JSONObject] = [
    _python(
        "echo",
        "Echo",
        "Returns the message it was given.",
        "demo.echo",
        {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The text to send back"}},
            "required": ["message"],
        },
        annotations={"readOnlyHint": True, "openWorldHint": False},
    ),
    _python(
        "add",
        "Add two numbers",
        "Adds a and b and returns the sum as structured content.",
        "demo.add",
        {
            "type": "object",
            "properties": {
                "a": {"type": "number", "description": "First addend"},
                "b": {"type": "number", "description": "Second addend"},
            },
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {"sum": {"type": "number", "description": "a + b"}},
            "required": ["sum"],
        },
        annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    ),
    _python(
        "count_slowly",
        "Count slowly",
        "Counts from 1 to steps, reporting progress after each step.",
        "demo.count_slowly",
        {
            "type": "object",
            "properties": {
                "steps": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
                "delay_ms": {"type": "integer", "minimum": 0, "maximum": 5000, "default": 500},
            },
            "additionalProperties": False,
        },
        task_support=TaskSupport.OPTIONAL,
    ),
    _python(
        "ask_user_name",
        "Ask for your name",
        "Asks the user for their name (elicitation) and greets them.",
        "demo.ask_user_name",
        NO_ARGUMENTS,
    ),
    _python(
        "summarize",
        "Summarize",
        "Asks the client's language model to summarize a text (sampling).",
        "demo.summarize",
        {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The text to summarize"},
                "max_words": {"type": "integer", "minimum": 5, "maximum": 500, "default": 50},
            },
            "required": ["text"],
            "additionalProperties": False,
        },
    ),
    _python(
        "list_client_roots",
        "List client roots",
        "Lists the filesystem roots the client shares with this server.",
        "demo.list_client_roots",
        NO_ARGUMENTS,
    ),
    {
        "name": "platform_info",
        "title": "Platform information",
        "description": "Describes the platform hosting this MCP server.",
        "input_schema": NO_ARGUMENTS,
        "backend": Backend.STATIC,
        "config": {
            "content": [
                {
                    "type": "text",
                    "text": "This server is the demo tenant of a multi-tenant MCP hosting platform built on "
                    "Django. Each tenant registers its tools, resources and prompts in the admin.",
                }
            ],
            "isError": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
]

RESOURCES: list[JSONObject] = [
    {
        "uri": "demo://readme",
        "name": "readme",
        "title": "About the demo tenant",
        "description": "What this server offers and how to try it.",
        "mime_type": "text/markdown",
        "text": README,
    }
]

TEMPLATES: list[JSONObject] = [
    {
        "name": "greeting",
        "uri_template": "demo://greeting/{name}",
        "title": "Greeting",
        "description": "A greeting for whoever you name.",
        "mime_type": "text/plain",
        "backend": Backend.STATIC,
        "config": {"text": "Hello, {name}! This greeting came from a resource template."},
        "completions": {"name": ["Ada", "Alan", "Barbara", "Grace", "Linus"]},
    }
]

PROMPTS: list[JSONObject] = [
    {
        "name": "code_review",
        "title": "Code review",
        "description": "Asks for a careful review of a piece of code.",
        "arguments": [
            {"name": "language", "description": "Programming language of the code", "required": True},
            {"name": "code", "description": "The code to review", "required": True},
        ],
        "completions": {
            "language": ["c", "go", "java", "javascript", "kotlin", "python", "rust", "typescript"],
        },
        "messages": [
            {
                "role": "user",
                "content": {
                    "type": "text",
                    "text": "Please review this {{language}} code. Point out bugs, unclear names and missing "
                    "tests, most important first.\n\n```{{language}}\n{{code}}\n```",
                },
            }
        ],
    }
]

DEMO = CatalogSpec(
    slug="demo",
    tenant={
        "name": "Demo",
        "instructions": "A demo server: try platform_info first, then the other tools, the readme resource "
        "and the code_review prompt.",
        "requires_authorization": False,
    },
    tools=TOOLS,
    resources=RESOURCES,
    templates=TEMPLATES,
    prompts=PROMPTS,
)
