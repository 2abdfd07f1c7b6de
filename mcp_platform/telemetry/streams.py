"""``mcp_open_streams{tenant,kind}``: the MCP endpoints' responses that are SSE streams, counted from the moment
their headers go out until their last chunk is sent or the request ends (client gone, process stopping).

ASGI middleware between the gateway middleware (which resolved the tenant) and the endpoints, so no consumer needs
to know about metrics and every kind of stream is counted alike: ``get`` (a session's GET stream or resumption),
``post`` (a POST answered as a stream, either era), ``listen`` (2026-07-28 ``subscriptions/listen``, told apart by
its ``Mcp-Method`` header) and ``legacy_sse`` (the 2024-11-05 stream).
"""

from __future__ import annotations

from typing import Any

from mcp_infra.telemetry.metrics import OPEN_STREAMS

# The gateway middleware's scope key for the resolved tenant (mcp_platform.gateway.middleware.TENANT_SCOPE_KEY;
# not imported, so telemetry does not depend on the gateway).
TENANT_SCOPE_KEY = "mcp.tenant"
EVENT_STREAM = b"text/event-stream"


def stream_kind(scope: dict[str, Any]) -> str | None:
    """The kind an SSE response to this request would be, or None for requests that are not MCP endpoints'."""
    parts = scope["path"].split("/")
    if len(parts) != 4:
        return None
    endpoint = parts[3]
    if endpoint == "sse":
        return "legacy_sse"
    if endpoint != "mcp":
        return None
    if scope["method"] == "GET":
        return "get"
    for name, value in scope.get("headers", ()):
        if name == b"mcp-method":
            return "listen" if value == b"subscriptions/listen" else "post"
    return "post"


def _is_event_stream(message: dict[str, Any]) -> bool:
    for name, value in message.get("headers", ()):
        if name.lower() == b"content-type":
            return bytes(value).startswith(EVENT_STREAM)
    return False


class OpenStreamsMiddleware:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        tenant = scope.get(TENANT_SCOPE_KEY) if scope["type"] == "http" else None
        kind = stream_kind(scope) if tenant is not None else None
        if tenant is None or kind is None:
            await self.app(scope, receive, send)
            return
        gauge: Any = None  # labelled only for a stream: most responses are JSON
        counted = False

        async def counting_send(message: dict[str, Any]) -> None:
            nonlocal counted, gauge
            kind_of = message["type"]
            if kind_of == "http.response.start" and _is_event_stream(message):
                counted = True
                gauge = OPEN_STREAMS.labels(tenant.slug, kind)
                gauge.inc()
            elif counted and kind_of == "http.response.body" and not message.get("more_body", False):
                counted = False
                gauge.dec()
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            if counted:
                gauge.dec()
