"""ASGI middleware in front of the MCP endpoints: the tenant and server (404), Host and Origin (403), body limit
(413), bearer token (401/403).

Channels offers none of these for plain HTTP. Only paths under ``/t/`` are guarded here; Django guards the
rest. The tenant is resolved once, here, and handed on in ``scope["mcp.tenant"]``, and so is the named server of a
path under ``/t/<tenant>/s/<server>/`` in ``scope["mcp.server"]`` (None for the tenant's default server); a tenant
that requires authorization also gets the caller's ``Principal`` in ``scope["mcp.principal"]``, and the
``Authorization`` header is dropped from the scope once checked, so no later code can pass the client's token on.
"""

from __future__ import annotations

import functools
from typing import Any

from mcp_core import http as mcp_http
from mcp_core import jsonrpc
from mcp_infra import addresses
from mcp_infra.conf import platform_settings
from mcp_platform.gateway.responses import DATABASE_UNREACHABLE, send_error, send_json
from mcp_platform.oauth import resource
from mcp_platform.oauth.scopes import SCOPES, arequired_scopes
from tenants.cache import tenant_cache

Scope = dict[str, Any]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


TENANT_SCOPE_KEY = "mcp.tenant"
SERVER_SCOPE_KEY = "mcp.server"


# A client sends the same Host on every request: the answer is remembered per value (and per setting, so a test
# that changes ALLOWED_HOSTS is answered anew). Bounded: a client inventing Host values fills it with refusals.
@functools.lru_cache(maxsize=256)
def _host_allowed(host: str | None, allowed_hosts: tuple[str, ...]) -> bool:
    return mcp_http.host_allowed(host, allowed_hosts)


def granted_scopes(scope: Scope) -> frozenset[str] | None:
    """The scopes the caller's token grants; None on a tenant that does not require authorization."""
    principal = scope.get(resource.PRINCIPAL_SCOPE_KEY)
    return principal.scopes if isinstance(principal, resource.Principal) else None


class GatewayMiddleware:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/t/"):
            await self.app(scope, receive, send)
            return

        try:
            admitted = await self._admit(scope, receive, send)
        except DATABASE_UNREACHABLE as exc:
            # The tenant, the token or the scopes could not be read: the database is away for a moment (503).
            await send_error(send, exc)
            return
        if admitted is None:
            return
        scope, body = admitted
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _admit(self, scope: Scope, receive: Any, send: Any) -> tuple[Scope, bytes] | None:
        """The request's scope (tenant and principal added) and whole body, or None once refused."""

        async def reject(status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
            body = jsonrpc.encode_error(None, {"code": -32000, "message": message})
            await send_json(send, status, body, headers=headers)

        allowed_hosts = platform_settings.ALLOWED_HOSTS
        if not _host_allowed(_header(scope, b"host"), tuple(allowed_hosts)):
            await reject(403, "Forbidden: Host not allowed")
            return None
        slug, server_slug = addresses.path_tenant_and_server(scope["path"])
        tenant = await tenant_cache.servable(slug) if slug else None
        if tenant is None:
            await reject(404, "Unknown tenant")
            return None
        server = await tenant_cache.server(tenant, server_slug) if server_slug else None
        if server_slug and server is None:
            await reject(404, "Unknown server")
            return None
        # Resolved once here; the consumers read them from the scope.
        scope = {**scope, TENANT_SCOPE_KEY: tenant, SERVER_SCOPE_KEY: server}
        origin = _header(scope, b"origin")
        if not mcp_http.origin_allowed(origin, allowed_hosts=allowed_hosts, allowed_origins=tenant.allowed_origins):
            await reject(403, "Forbidden: Origin not allowed")
            return None

        if tenant.requires_authorization:
            outcome = await resource.aauthenticate(
                tenant=tenant,
                authorization=_header(scope, b"authorization"),
                base_url=addresses.base_url_from_scope(scope),
                endpoint=addresses.endpoint_of(scope["path"]),
                server=server_slug,
                scopes=SCOPES if server is None else frozenset({*SCOPES, *server.required_scopes.split()}),
            )
            if isinstance(outcome, resource.Challenge):
                message = "Unauthorized" if outcome.status == 401 else "Forbidden"
                await reject(outcome.status, message, [(b"www-authenticate", outcome.www_authenticate.encode())])
                return None
            headers = [(key, value) for key, value in scope.get("headers", []) if key != b"authorization"]
            scope = {**scope, "headers": headers, resource.PRINCIPAL_SCOPE_KEY: outcome}

        limit = platform_settings.MAX_REQUEST_BYTES
        declared = _header(scope, b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await reject(413, f"Payload Too Large: the limit is {limit} bytes")
            return None
        # Read the whole body here (bounded), then hand it to the app as one message.
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body.extend(message.get("body", b""))
            if len(body) > limit:
                await reject(413, f"Payload Too Large: the limit is {limit} bytes")
                return None
            if not message.get("more_body"):
                break
        principal = scope.get(resource.PRINCIPAL_SCOPE_KEY)
        if isinstance(principal, resource.Principal):
            missing = await arequired_scopes(bytes(body), tenant=tenant, server=server) - principal.scopes
            if missing:
                # Name everything the client needs, not only what is missing, so a client that asks
                # for exactly this set keeps what it already had.
                refusal = resource.challenge(
                    base_url=addresses.base_url_from_scope(scope),
                    slug=tenant.slug,
                    endpoint=addresses.endpoint_of(scope["path"]),
                    server=server_slug,
                    error="insufficient_scope",
                    description=f"This request needs {' '.join(sorted(missing))}.",
                    scopes=principal.scopes | missing,
                )
                await reject(403, "Forbidden", [(b"www-authenticate", refusal.www_authenticate.encode())])
                return None
        return scope, bytes(body)
