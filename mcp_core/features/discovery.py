"""Discovery: ``server/discover``, the stateless era's answer to "who are you and what do you speak"."""

from __future__ import annotations

from typing import Any

from mcp_core.env import Env
from mcp_core.envelope import SUPPORTED_VERSIONS
from mcp_core.features.lifecycle import server_capabilities

JSONObject = dict[str, Any]


async def discover(params: JSONObject | None, env: Env) -> JSONObject:
    """Every version served (both eras), this era's capabilities and the instructions; the dispatcher adds
    ``serverInfo``, ``resultType`` and the cache hints."""
    result: JSONObject = {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": server_capabilities(env.version, tasks=env.tasks is not None),
    }
    if env.server.instructions:
        result["instructions"] = env.server.instructions
    return result
