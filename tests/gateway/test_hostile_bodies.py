"""Nesting past every limit on the MCP endpoint: a body nested deeper than JSON decoding allows is a parse error,
and arguments as deep as decoding allows, checked against a recursive schema, are invalid arguments, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from tests.factories import ToolFactory
from tests.gateway.conftest import META, V, request, rpc

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

MCP = "/t/acme/mcp"
# Lists of lists, to any depth: validating a value against it walks every level.
RECURSIVE = {
    "type": "object",
    "properties": {"tree": {"$ref": "#/$defs/tree"}},
    "$defs": {"tree": {"type": "array", "items": {"$ref": "#/$defs/tree"}}},
}


async def test_a_body_nested_a_hundred_thousand_levels_is_a_parse_error(tenant: Any) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}}"

    reply = await request("POST", MCP, raw=body, headers={"mcp-protocol-version": V, "mcp-method": "ping"})

    assert reply.status == 400
    assert reply.json()["error"]["code"] == -32700


async def test_arguments_as_deep_as_decoding_allows_are_invalid_arguments(tenant: Any) -> None:
    await sync_to_async(ToolFactory)(tenant=tenant, name="plant", input_schema=RECURSIVE)
    params = {"name": "plant", "arguments": {"tree": "PLACEHOLDER"}, "_meta": META}
    body = rpc("tools/call", params)
    raw = json.dumps(body).replace('"PLACEHOLDER"', "[" * 1000 + "1" + "]" * 1000).encode()

    reply = await request(
        "POST", MCP, raw=raw, headers={"mcp-protocol-version": V, "mcp-method": "tools/call", "mcp-name": "plant"}
    )

    assert reply.status == 200
    result = reply.json()["result"]
    assert result["isError"] is True
    assert (
        result["content"][0]["text"]
        == "Invalid arguments for tool plant: (root): the value is nested too deeply to check"
    )
