"""Prompts: ``prompts/list`` and ``prompts/get`` with argument checks."""

from __future__ import annotations

from typing import Any

from mcp_core.env import Env
from mcp_core.errors import InvalidParams
from mcp_core.features.listing import list_page

JSONObject = dict[str, Any]


async def list_prompts(params: JSONObject | None, env: Env) -> JSONObject:
    return await list_page(params, env.catalog.list_prompts, key="prompts", page_size=env.page_size)


async def get_prompt(params: JSONObject | None, env: Env) -> JSONObject:
    """Raises InvalidParams for an unknown prompt, non-string arguments or a missing required argument."""
    params = params or {}
    name = params.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidParams("prompts/get needs a prompt name")
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        raise InvalidParams("prompt arguments must be an object of strings")
    prompt = await env.catalog.get_prompt(name)
    if prompt is None:
        raise InvalidParams(f"Unknown prompt: {name}", data={"name": name})
    declared = prompt.wire.get("arguments") or []
    missing = [a["name"] for a in declared if a.get("required") and a["name"] not in arguments]
    if missing:
        raise InvalidParams(f"Missing required arguments: {', '.join(missing)}", data={"missing": missing})
    result: JSONObject = {"messages": env.catalog.render_prompt(prompt, arguments)}
    if prompt.wire.get("description"):
        result["description"] = prompt.wire["description"]
    return result
