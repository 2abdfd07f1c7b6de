"""Routing of ``/t/<tenant>/<endpoint>`` and ``/t/<tenant>/s/<server>/<endpoint>`` (a named server of the tenant) to
the endpoint's consumer; every other path goes to Django.

Channels' ``URLRouter`` resolves Django URL patterns and copies the scope on every request. The gateway
middleware in front of this router has already parsed the path and resolved the tenant, so a dictionary
look-up on the last segment is all that is left to do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp_infra.addresses import SERVERS

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


class TenantEndpointRouter:
    def __init__(self, endpoints: Mapping[str, ASGIApp], fallback: ASGIApp) -> None:
        self.endpoints = dict(endpoints)
        self.fallback = fallback

    def app_for(self, path: str) -> ASGIApp:
        """The consumer of ``/t/<tenant>/<endpoint>`` or ``/t/<tenant>/s/<server>/<endpoint>`` exactly (no trailing
        slash), else the fallback."""
        parts = path.split("/")
        if len(parts) == 4 and parts[0] == "" and parts[1] == "t" and parts[2]:
            return self.endpoints.get(parts[3], self.fallback)
        if len(parts) == 6 and parts[0] == "" and parts[1] == "t" and parts[2] and parts[3] == SERVERS and parts[4]:
            return self.endpoints.get(parts[5], self.fallback)
        return self.fallback

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        app = self.app_for(scope["path"]) if scope["type"] == "http" else self.fallback
        await app(scope, receive, send)
