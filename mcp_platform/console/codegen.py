"""A console run as code to copy: the same call with the official Python SDK (``mcp`` 2.x), the TypeScript SDK
(``@modelcontextprotocol/sdk``) and curl, each complete and runnable against the tenant's endpoint.

A tenant that requires authorization gets code that reads an access token from ``MCP_TOKEN``: the console runs as the
signed-in admin, and a token is never put in the page. Pure functions of their arguments: no request, no database."""

from __future__ import annotations

import json
import pprint
import shlex
from dataclasses import dataclass
from typing import Any

# The curl command speaks the stateless revision: one POST, no session to open first.
STATELESS_VERSION = "2026-07-28"
TOKEN_VARIABLE = "MCP_TOKEN"
CLIENT_INFO = {"name": "curl", "version": "1"}


@dataclass(frozen=True)
class CallToCopy:
    """One ``tools/call``: ``tool`` with ``arguments`` on ``endpoint``, which ``needs_token`` or is public."""

    endpoint: str
    tool: str
    arguments: dict[str, Any]
    needs_token: bool


def python_code(call: CallToCopy) -> str:
    """A script for the official Python SDK 2.x (``pip install "mcp>=2.3"``) that makes the call and prints its
    result."""
    arguments = pprint.pformat(call.arguments, indent=4, width=100, sort_dicts=False)
    if call.needs_token:
        imports = (
            "import asyncio\nimport os\n\nfrom mcp.client import Client\n"
            "from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client\n"
        )
        connect = (
            f"    token = os.environ[{TOKEN_VARIABLE!r}]\n"
            '    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})\n'
            "    async with http, Client(streamable_http_client(ENDPOINT, http_client=http)) as client:\n"
        )
    else:
        imports = "import asyncio\n\nfrom mcp.client import Client\n"
        connect = "    async with Client(ENDPOINT) as client:\n"
    return (
        f'# pip install "mcp>=2.3"{f"; export {TOKEN_VARIABLE}=<an access token>" if call.needs_token else ""}\n'
        f"{imports}\n"
        f"ENDPOINT = {call.endpoint!r}\n"
        f"TOOL = {call.tool!r}\n"
        f"ARGUMENTS = {arguments}\n\n\n"
        "async def main() -> None:\n"
        f"{connect}"
        "        result = await client.call_tool(TOOL, ARGUMENTS)\n"
        "    print(result.model_dump_json(indent=2, by_alias=True, exclude_none=True))\n\n\n"
        "asyncio.run(main())\n"
    )


def typescript_code(call: CallToCopy) -> str:
    """An ES module for the TypeScript SDK (``npm install @modelcontextprotocol/sdk``; run as ``call.mjs`` with
    Node 18 or later) that makes the call and prints its result."""
    options = (
        f", {{\n  requestInit: {{ headers: {{ Authorization: `Bearer ${{process.env.{TOKEN_VARIABLE}}}` }} }},\n}}"
        if call.needs_token
        else ""
    )
    arguments = json.dumps(call.arguments, indent=2, ensure_ascii=False)
    token = f"; export {TOKEN_VARIABLE}=<an access token>" if call.needs_token else ""
    return (
        f"// npm install @modelcontextprotocol/sdk{token}\n"
        'import { Client } from "@modelcontextprotocol/sdk/client/index.js";\n'
        'import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";\n\n'
        f"const transport = new StreamableHTTPClientTransport(new URL({json.dumps(call.endpoint)}){options});\n"
        'const client = new Client({ name: "console-copy", version: "1.0.0" });\n'
        "await client.connect(transport);\n"
        f"const result = await client.callTool({{\n  name: {json.dumps(call.tool)},\n"
        f"  arguments: {arguments.replace(chr(10), chr(10) + '  ')},\n}});\n"
        "console.log(JSON.stringify(result, null, 2));\n"
        "await client.close();\n"
    )


def curl_command(call: CallToCopy) -> str:
    """One curl command: a 2026-07-28 ``tools/call`` POST (no session), its answer printed as it comes (JSON, or
    the events of a tool that reports progress)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": call.tool, "arguments": call.arguments, "_meta": meta},
    }
    lines = [
        f"curl -sS -N {shlex.quote(call.endpoint)}",
        "-H 'Content-Type: application/json'",
        "-H 'Accept: application/json, text/event-stream'",
        f"-H 'MCP-Protocol-Version: {STATELESS_VERSION}'",
        "-H 'Mcp-Method: tools/call'",
        f"-H {shlex.quote('Mcp-Name: ' + call.tool)}",
    ]
    if call.needs_token:
        lines.append(f'-H "Authorization: Bearer ${TOKEN_VARIABLE}"')
    lines.append(f"--data-raw {shlex.quote(json.dumps(body, separators=(',', ':'), ensure_ascii=False))}")
    return " \\\n  ".join(lines) + "\n"


def code_to_copy(call: CallToCopy) -> dict[str, str]:
    """Each form, by the name the page labels it with."""
    return {"python": python_code(call), "typescript": typescript_code(call), "curl": curl_command(call)}
