"""A console run as code to copy: the Python script compiles and holds the call's values as Python, the curl command
parses back (by a shell's rules) into the POST the endpoint expects, and a tenant that requires authorization gets
code that reads its token from the environment, never a token."""

from __future__ import annotations

import ast
import json
import shlex
from typing import Any

import pytest

from mcp_platform.console.codegen import CallToCopy, code_to_copy, curl_command, python_code, typescript_code

ENDPOINT = "https://mcp.example/t/shop/mcp"
# Values that trip naive quoting: quotes of both kinds, a backslash, a newline, JSON's true/null, non-ASCII.
ARGUMENTS: dict[str, Any] = {
    "pet_id": "7",
    "note": 'it\'s a "good" dog\\cat\nline two',
    "vaccinated": True,
    "owner": None,
    "tags": ["ünïcode", 3.5],
}


def call(*, needs_token: bool = False, arguments: dict[str, Any] | None = None) -> CallToCopy:
    return CallToCopy(
        endpoint=ENDPOINT,
        tool="get_pet",
        arguments=ARGUMENTS if arguments is None else arguments,
        needs_token=needs_token,
    )


def assigned(code: str, name: str) -> Any:
    """The literal value the module-level assignment to ``name`` gives."""
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} is not assigned")


@pytest.mark.parametrize("needs_token", [False, True])
def test_the_python_script_compiles_and_calls_the_tool_with_the_runs_arguments(needs_token: bool) -> None:
    code = python_code(call(needs_token=needs_token))

    compile(code, "call.py", "exec")
    assert assigned(code, "ENDPOINT") == ENDPOINT
    assert assigned(code, "TOOL") == "get_pet"
    assert assigned(code, "ARGUMENTS") == ARGUMENTS
    assert "client.call_tool(TOOL, ARGUMENTS)" in code
    assert ("os.environ['MCP_TOKEN']" in code) is needs_token


def test_the_curl_command_is_the_stateless_post_the_endpoint_expects() -> None:
    words = shlex.split(curl_command(call()).replace("\\\n", " "))

    assert words[:4] == ["curl", "-sS", "-N", ENDPOINT]
    headers = [words[i + 1] for i, word in enumerate(words) if word == "-H"]
    assert headers == [
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        "MCP-Protocol-Version: 2026-07-28",
        "Mcp-Method: tools/call",
        "Mcp-Name: get_pet",
    ]
    body = json.loads(words[words.index("--data-raw") + 1])
    assert body["method"] == "tools/call" and body["jsonrpc"] == "2.0"
    assert body["params"]["name"] == "get_pet"
    assert body["params"]["arguments"] == ARGUMENTS
    assert body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"


def test_a_tenant_that_requires_authorization_gets_a_token_from_the_environment() -> None:
    command = curl_command(call(needs_token=True))
    words = shlex.split(command.replace("\\\n", " "))

    assert '-H "Authorization: Bearer $MCP_TOKEN"' in command  # double quotes: the shell puts the token in
    assert "Authorization: Bearer $MCP_TOKEN" in words
    assert "process.env.MCP_TOKEN" in typescript_code(call(needs_token=True))
    assert "Authorization" not in typescript_code(call()) + python_code(call()) + curl_command(call())


def test_the_typescript_module_imports_what_it_uses_and_holds_the_arguments_as_json() -> None:
    code = typescript_code(call())

    assert 'import { Client } from "@modelcontextprotocol/sdk/client/index.js";' in code
    assert 'from "@modelcontextprotocol/sdk/client/streamableHttp.js";' in code
    assert f'new StreamableHTTPClientTransport(new URL("{ENDPOINT}"))' in code
    start = code.index("arguments: ") + len("arguments: ")
    end = code.index("\n  },\n});") + len("\n  }")
    assert json.loads(code[start:end]) == ARGUMENTS


def test_every_form_is_offered() -> None:
    assert set(code_to_copy(call(arguments={}))) == {"python", "typescript", "curl"}
