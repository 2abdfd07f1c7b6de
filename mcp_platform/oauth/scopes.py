"""Which OAuth scopes an MCP request needs: ``mcp:tools``, ``mcp:resources``, ``mcp:prompts``.

Lifecycle and plumbing (``initialize``, ``ping``, ``server/discover``, notifications, responses) need only
a valid token. A batch needs the union of its messages' scopes.
"""

from __future__ import annotations

from typing import Any

import orjson

TOOLS = "mcp:tools"
RESOURCES = "mcp:resources"
PROMPTS = "mcp:prompts"

_BY_PREFIX = {"tools/": TOOLS, "tasks/": TOOLS, "resources/": RESOURCES, "prompts/": PROMPTS}
_BY_REF = {"ref/prompt": PROMPTS, "ref/resource": RESOURCES}


def _scope_for(method: str, params: Any) -> str | None:
    if method == "completion/complete":
        ref = params.get("ref") if isinstance(params, dict) else None
        return _BY_REF.get(ref.get("type", "")) if isinstance(ref, dict) else None
    return next((scope for prefix, scope in _BY_PREFIX.items() if method.startswith(prefix)), None)


def required_scopes(body: bytes) -> frozenset[str]:
    """The scopes the JSON-RPC message(s) in ``body`` need; none for bodies that do not parse."""
    try:
        parsed = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return frozenset()
    messages = parsed if isinstance(parsed, list) else [parsed]
    needed = set()
    for message in messages:
        if isinstance(message, dict) and isinstance(message.get("method"), str):
            scope = _scope_for(message["method"], message.get("params"))
            if scope:
                needed.add(scope)
    return frozenset(needed)
