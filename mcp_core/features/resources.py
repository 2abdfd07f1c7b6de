"""Resources: list, read (concrete or through a template), templates, and subscriptions."""

from __future__ import annotations

from typing import Any

from mcp_core.caching import narrowest
from mcp_core.env import Env
from mcp_core.errors import InvalidParams, ResourceNotFound
from mcp_core.features.listing import list_page

JSONObject = dict[str, Any]
MAX_URI_LENGTH = 8192


def _uri(params: JSONObject | None) -> str:
    uri = (params or {}).get("uri")
    if not isinstance(uri, str) or not uri:
        raise InvalidParams("a resource uri is required")
    if len(uri) > MAX_URI_LENGTH:
        raise InvalidParams("resource uri is too long")
    return uri


async def list_resources(params: JSONObject | None, env: Env) -> JSONObject:
    return await list_page(params, env.catalog.list_resources, key="resources", env=env)


async def list_resource_templates(params: JSONObject | None, env: Env) -> JSONObject:
    return await list_page(params, env.catalog.list_resource_templates, key="resourceTemplates", env=env)


async def read_resource(params: JSONObject | None, env: Env) -> JSONObject:
    """Raises ResourceNotFound (-32002; -32602 in the stateless era) when nothing has that URI."""
    uri = _uri(params)
    ctx = env.request_context({})
    contents = await env.catalog.read_resource(uri, ctx)
    if contents is None:
        if env.stateless:
            raise InvalidParams("Resource not found", data={"uri": uri})
        raise ResourceNotFound("Resource not found", data={"uri": uri})
    if env.stateless and ctx.cache_limit is not None:
        # The contents came from a source with hints of its own (an upstream): never promise more than it did.
        hints = narrowest(env.cache, ctx.cache_limit)
        return {"ttlMs": hints.ttl_ms, "cacheScope": hints.scope, "contents": contents}
    return {"contents": contents}


async def subscribe(params: JSONObject | None, env: Env) -> JSONObject:
    uri = _uri(params)
    if env.session is None:
        raise InvalidParams("resources/subscribe needs a session")
    await env.session.subscribe(uri)
    return {}


async def unsubscribe(params: JSONObject | None, env: Env) -> JSONObject:
    uri = _uri(params)
    if env.session is None:
        raise InvalidParams("resources/unsubscribe needs a session")
    await env.session.unsubscribe(uri)
    return {}
