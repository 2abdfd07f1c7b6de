"""The gateway's side of the observation seam: the ``CallInfo`` of one JSON-RPC request, from what the endpoint
knows about its tenant, caller, client and transport."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from mcp_core import jsonrpc
from mcp_platform.observe.calls import CallInfo

# Where each method names what it acts on, and whether it carries arguments.
_TARGET_KEYS = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}
_ARGUMENT_METHODS = frozenset({"tools/call", "prompts/get"})


def principal_parts(label: str) -> tuple[str, str]:
    """``(user_id, client_id)`` of a principal label (``user:<id> client:<id>``, ``client:<id>`` or
    ``anonymous``, see ``mcp_platform.oauth.resource.principal_label``); "" for what is absent."""
    user = client = ""
    for part in label.split(" "):
        kind, _, value = part.partition(":")
        if kind == "user":
            user = value
        elif kind == "client":
            client = value
    return user, client


# The W3C trace context keys MCP carries in a request's ``_meta`` (SEP-414), unprefixed by exception.
TRACE_CONTEXT_KEYS = ("traceparent", "tracestate")


def with_meta_trace_context(headers: Mapping[str, str] | None, meta: Mapping[str, Any]) -> dict[str, str]:
    """``headers`` with the trace context of the request's ``_meta`` in place of the HTTP request's: one HTTP
    request may carry several JSON-RPC requests, each continuing a trace of its own."""
    merged = {name: value for name, value in (headers or {}).items() if name not in TRACE_CONTEXT_KEYS}
    merged.update({key: meta[key] for key in TRACE_CONTEXT_KEYS if isinstance(meta.get(key), str)})
    return merged


def call_info(
    *,
    tenant_id: int,
    tenant_slug: str,
    request: jsonrpc.Request,
    principal: str,
    client_info: Mapping[str, Any] | None,
    protocol_version: str,
    transport: str,
    headers: Mapping[str, str] | None,
    keep_arguments: bool,
    server: str = "",
) -> CallInfo:
    """What is known as ``request`` starts; ``principal`` is the caller's label, ``server`` the slug of the tenant's
    named server the request went to ("" for its default server). The arguments are kept only when
    ``keep_arguments`` (the tenant records them in its activity log): a call's info may be held for a while."""
    params = request.params or {}
    key = _TARGET_KEYS.get(request.method)
    target = params.get(key) if key is not None else None
    arguments = params.get("arguments") if keep_arguments and request.method in _ARGUMENT_METHODS else None
    user, client = principal_parts(principal)
    info = client_info or {}
    meta = params.get("_meta")
    if isinstance(meta, dict) and isinstance(meta.get("traceparent"), str):
        headers = with_meta_trace_context(headers, meta)
    return CallInfo(
        tenant_id=tenant_id,
        tenant_slug=tenant_slug,
        method=request.method,
        target=target if isinstance(target, str) else None,
        principal=user,
        client_id=client,
        client_name=str(info.get("name") or ""),
        client_version=str(info.get("version") or ""),
        protocol_version=protocol_version,
        transport=transport,
        request_id=str(request.id),
        started=time.perf_counter(),
        started_at=time.time(),
        arguments=arguments if isinstance(arguments, dict) else None,
        headers=headers,
        server=server,
    )
