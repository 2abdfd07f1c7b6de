"""Completion: ``completion/complete`` for prompt arguments and resource-template variables."""

from __future__ import annotations

from typing import Any

from mcp_core.env import Env
from mcp_core.errors import InvalidParams

JSONObject = dict[str, Any]
MAX_VALUES = 100


async def complete(params: JSONObject | None, env: Env) -> JSONObject:
    """Raises InvalidParams for a malformed or unknown reference or argument."""
    params = params or {}
    ref = params.get("ref")
    if not isinstance(ref, dict) or ref.get("type") not in ("ref/prompt", "ref/resource"):
        raise InvalidParams("ref must be a ref/prompt or ref/resource")
    if ref["type"] == "ref/prompt" and not isinstance(ref.get("name"), str):
        raise InvalidParams("ref/prompt needs a name")
    if ref["type"] == "ref/resource" and not isinstance(ref.get("uri"), str):
        raise InvalidParams("ref/resource needs a uri")
    argument = params.get("argument")
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
        raise InvalidParams("argument must be an object with a name")
    if not isinstance(argument.get("value", ""), str):
        raise InvalidParams("argument value must be a string")
    context = params.get("context") or {}
    context_arguments = context.get("arguments") if isinstance(context, dict) else None
    if context_arguments is not None and not isinstance(context_arguments, dict):
        raise InvalidParams("context.arguments must be an object")
    values = await env.catalog.complete(ref, argument, context_arguments or {})
    if values is None:
        raise InvalidParams("Unknown completion reference", data={"ref": ref})
    return {
        "completion": {
            "values": values[:MAX_VALUES],
            "total": len(values),
            "hasMore": len(values) > MAX_VALUES,
        }
    }
