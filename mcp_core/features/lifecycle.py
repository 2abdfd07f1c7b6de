"""Lifecycle: ``initialize`` (version negotiation, capabilities) and ``ping``."""

from __future__ import annotations

from typing import Any

from mcp_core.env import Env, ServerIdentity
from mcp_core.errors import InvalidParams
from mcp_core.tasks import TASKS_EXTENSION
from mcp_core.text import json_storable
from mcp_core.versions import STATELESS_VERSIONS, V2025_03_26, V2025_06_18, V2025_11_25, at_least, negotiate

JSONObject = dict[str, Any]


def server_capabilities(version: str, *, tasks: bool = False) -> JSONObject:
    """What this server offers at ``version``; only features the revision defines are declared.

    In the stateless era list changes and resource updates are delivered on ``subscriptions/listen``, and tasks
    are the ``io.modelcontextprotocol/tasks`` extension; 2025-11-25 has them in core (``tasks``).
    """
    capabilities: JSONObject = {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "logging": {},
    }
    if at_least(version, V2025_03_26):
        capabilities["completions"] = {}
    if tasks and version in STATELESS_VERSIONS:
        capabilities["extensions"] = {TASKS_EXTENSION: {}}
    elif tasks and at_least(version, V2025_11_25):
        capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    return capabilities


def server_info(server: ServerIdentity, version: str) -> JSONObject:
    info: JSONObject = {"name": server.name, "version": server.version}
    if server.title and at_least(version, V2025_06_18):
        info["title"] = server.title
    return info


def parse_initialize(params: JSONObject | None) -> tuple[str, JSONObject, JSONObject]:
    """``(negotiated_version, client_capabilities, client_info)`` of an ``initialize``. Raises InvalidParams."""
    if not isinstance(params, dict):
        raise InvalidParams("initialize needs params")
    requested = params.get("protocolVersion")
    if not isinstance(requested, str) or not requested:
        raise InvalidParams("initialize needs a protocolVersion string")
    capabilities = params.get("capabilities", {})
    if not isinstance(capabilities, dict):
        raise InvalidParams("capabilities must be an object")
    client_info = params.get("clientInfo", {})
    if not isinstance(client_info, dict):
        raise InvalidParams("clientInfo must be an object")
    if not json_storable([requested, capabilities, client_info]):
        raise InvalidParams("initialize params must not contain U+0000")
    return negotiate(requested), capabilities, client_info


def initialize_result(server: ServerIdentity, version: str, *, tasks: bool = False) -> JSONObject:
    result: JSONObject = {
        "protocolVersion": version,
        "capabilities": server_capabilities(version, tasks=tasks),
        "serverInfo": server_info(server, version),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


async def ping(params: JSONObject | None, env: Env) -> JSONObject:
    return {}
