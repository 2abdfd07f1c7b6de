"""Which OAuth scopes an MCP request needs: ``mcp:tools``, ``mcp:resources``, ``mcp:prompts``, plus what a tool
called requires of its own (``Tool.required_scopes``, set by the tenant's admin), plus, on a named server, what the
server requires of every request (``Server.required_scopes``).

Lifecycle and plumbing (``initialize``, ``ping``, ``server/discover``, notifications, responses) need only
a valid token. A batch needs the union of its messages' scopes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from tenants.cache import tenant_cache
from tenants.models import Server, Tenant, Tool

TOOLS = "mcp:tools"
RESOURCES = "mcp:resources"
PROMPTS = "mcp:prompts"
# The platform's own scopes, in the order challenges name them.
SCOPES = (TOOLS, RESOURCES, PROMPTS)

_BY_PREFIX = {"tools/": TOOLS, "tasks/": TOOLS, "resources/": RESOURCES, "prompts/": PROMPTS}
_BY_REF = {"ref/prompt": PROMPTS, "ref/resource": RESOURCES}


def ordered(scopes: Iterable[str]) -> list[str]:
    """The platform's scopes first, in their usual order, then any others alphabetically."""
    given = set(scopes)
    return [s for s in SCOPES if s in given] + sorted(given - set(SCOPES))


def _scope_for(method: str, params: Any) -> str | None:
    if method == "completion/complete":
        ref = params.get("ref") if isinstance(params, dict) else None
        return _BY_REF.get(ref.get("type", "")) if isinstance(ref, dict) else None
    return next((scope for prefix, scope in _BY_PREFIX.items() if method.startswith(prefix)), None)


def _messages(body: bytes) -> list[dict[str, Any]]:
    try:
        parsed = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return []
    messages = parsed if isinstance(parsed, list) else [parsed]
    return [m for m in messages if isinstance(m, dict) and isinstance(m.get("method"), str)]


def _platform_scopes(messages: list[dict[str, Any]]) -> frozenset[str]:
    needed = {_scope_for(m["method"], m.get("params")) for m in messages}
    return frozenset(scope for scope in needed if scope)


def required_scopes(body: bytes) -> frozenset[str]:
    """The platform scopes the JSON-RPC message(s) in ``body`` need; none for bodies that do not parse."""
    return _platform_scopes(_messages(body))


async def arequired_scopes(body: bytes, *, tenant: Tenant, server: Server | None = None) -> frozenset[str]:
    """``required_scopes`` plus the scopes of every enabled tool ``body`` calls (among those ``server`` serves, when
    the request is to one of the tenant's named servers) and that server's own, read through the tenant cache (no
    query while the tenant's catalog is cached)."""
    messages = _messages(body)
    needed = set(_platform_scopes(messages))
    if server is not None:
        needed.update(server.required_scopes.split())
    catalog = tenant_cache.catalog(tenant, server=server)
    for message in messages:
        params = message.get("params")
        if message["method"] == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str):
            tool = await catalog.get_tool(params["name"])
            if tool is not None and isinstance(tool.handle, Tool):
                needed.update(tool.handle.required_scopes.split())
    return frozenset(needed)
