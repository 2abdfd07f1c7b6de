"""Which OAuth scopes an MCP request needs: ``mcp:tools``, ``mcp:resources``, ``mcp:prompts``, plus what a tool
called requires of its own (``Tool.required_scopes``, set by the tenant's admin).

Lifecycle and plumbing (``initialize``, ``ping``, ``server/discover``, notifications, responses) need only
a valid token. A batch needs the union of its messages' scopes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from tenants.models import Tenant
from tenants.selectors import atool_required_scopes

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


def required_scopes(body: bytes) -> frozenset[str]:
    """The platform scopes the JSON-RPC message(s) in ``body`` need; none for bodies that do not parse."""
    needed = {_scope_for(m["method"], m.get("params")) for m in _messages(body)}
    return frozenset(scope for scope in needed if scope)


async def arequired_scopes(body: bytes, *, tenant: Tenant) -> frozenset[str]:
    """``required_scopes`` plus the scopes of every tool ``body`` calls (one query, only for ``tools/call``)."""
    called = {
        m["params"]["name"]
        for m in _messages(body)
        if m["method"] == "tools/call"
        and isinstance(m.get("params"), dict)
        and isinstance(m["params"].get("name"), str)
    }
    tool_scopes = await atool_required_scopes(tenant=tenant, names=called) if called else set()
    return required_scopes(body) | tool_scopes
