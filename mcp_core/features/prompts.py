"""Prompts: ``prompts/list`` and ``prompts/get`` with argument checks; rendering may ask the client (MRTR)."""

from __future__ import annotations

import logging
from typing import Any

from mcp_core.env import Env
from mcp_core.errors import ClientRequestFailed, InvalidParams, McpError, PromptError
from mcp_core.features.listing import list_page

logger = logging.getLogger(__name__)
JSONObject = dict[str, Any]


async def list_prompts(params: JSONObject | None, env: Env) -> JSONObject:
    return await list_page(params, env.catalog.list_prompts, key="prompts", env=env)


async def get_prompt(params: JSONObject | None, env: Env) -> JSONObject:
    """Raises InvalidParams for an unknown prompt, non-string arguments or a missing required argument;
    PromptError (-32603) when rendering fails; MissingClientCapability (stateless era) when the prompt needs a
    capability the client did not declare. A question to a 2026-07-28 client passes through as InputRequired.
    """
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
    try:
        rendered = await env.catalog.render_prompt(prompt, arguments, env.request_context(arguments))
    except McpError:
        raise
    except ClientRequestFailed as exc:
        raise PromptError(f"Prompt {name} needed something from the client that failed: {exc}") from None
    except Exception:
        logger.exception("prompt %s failed", name)
        raise PromptError(f"Prompt {name} failed with an internal error") from None
    result: JSONObject = {"messages": rendered["messages"]}
    description = rendered.get("description") or prompt.wire.get("description")
    if description:
        result["description"] = description
    return result
