"""Logging: ``logging/setLevel`` (RFC 5424 levels) for handshake-era sessions."""

from __future__ import annotations

from typing import Any

from mcp_core.context import LOG_LEVELS
from mcp_core.env import Env
from mcp_core.errors import InvalidParams

JSONObject = dict[str, Any]


async def set_level(params: JSONObject | None, env: Env) -> JSONObject:
    """Raises InvalidParams for a level outside RFC 5424's eight."""
    level = (params or {}).get("level")
    if level not in LOG_LEVELS:
        raise InvalidParams(f"level must be one of {', '.join(LOG_LEVELS)}")
    if env.session is None:
        raise InvalidParams("logging/setLevel needs a session")
    await env.session.set_log_level(level)
    return {}
