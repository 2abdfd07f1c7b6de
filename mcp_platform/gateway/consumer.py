"""The MCP endpoint ``/t/<tenant>/mcp`` (Streamable HTTP; ``/t/<tenant>/s/<server>/mcp`` for a named server) as a
Channels consumer: routing, the POST of either era to its handler, the stateless era's POST, and a session's DELETE.

Written on ``AsyncConsumer`` so a disconnect or a channel-layer message is handled while a response
streams: each HTTP request is served by its own asyncio task, and each JSON-RPC request by another.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from channels.exceptions import StopConsumer

from mcp_core import http as mcp_http
from mcp_core import jsonrpc
from mcp_core.envelope import is_stateless, open_envelope
from mcp_core.errors import McpError, TransportError
from mcp_core.features.subscriptions import LISTEN_METHOD, parse_listen
from mcp_core.versions import DEFAULT_HEADERLESS_VERSION, header_version_acceptable
from mcp_infra.addresses import base_url_from_scope
from mcp_platform.gateway import sessions
from mcp_platform.gateway.base import GatewayConsumer
from mcp_platform.gateway.handshake import scope_headers
from mcp_platform.gateway.handshake_post import HandshakePostMixin
from mcp_platform.gateway.listen import serve_listen
from mcp_platform.gateway.middleware import SERVER_SCOPE_KEY, TENANT_SCOPE_KEY, granted_scopes
from mcp_platform.gateway.models import LegacySession
from mcp_platform.gateway.responses import header_list, send_empty, send_error
from mcp_platform.gateway.server_lists import ServerLists
from mcp_platform.gateway.session_cache import session_cache
from mcp_platform.gateway.session_get import SessionGetMixin
from mcp_platform.gateway.stateless import serve_stateless, stateless_tasks
from mcp_platform.gateway.stream_access import StreamAccess
from mcp_platform.gateway.streams import requests_in_flight
from mcp_platform.oauth.resource import principal_label, request_caller
from mcp_platform.oauth.throttling import asgi_client_address
from mcp_platform.quotas.check import oauth_client_id, rate_limits_check_requests
from tenants.identity import server_identity
from tenants.models import Server, Tenant

logger = logging.getLogger(__name__)


class McpConsumer(HandshakePostMixin, SessionGetMixin, GatewayConsumer):
    """One HTTP request to a tenant's MCP endpoint: routed here, served here for the stateless era and DELETE, by
    ``HandshakePostMixin`` for a handshake-era POST and by ``SessionGetMixin`` for a session's GET."""

    _body = b""
    _task: asyncio.Task[None] | None = None
    # Set once the response belongs to a stream (started or about to be): errors then end up on it, not here.
    _sse_open = False

    async def http_request(self, message: dict[str, Any]) -> None:
        # The gateway middleware hands the whole (bounded) body over in this one message.
        self._body = message.get("body", b"")
        self._task = asyncio.create_task(self._serve())

    async def http_disconnect(self, message: dict[str, Any]) -> None:
        if self._post_stream is not None:
            self._post_stream.detach()
        if self._task is not None and not self._task.done() and not self._running_inline:
            self._task.cancel()
        raise StopConsumer()

    # --- serving -----------------------------------------------------------------------------------

    async def _serve(self) -> None:
        # In flight until it ends (a handshake-era run in this task outlives its connection): the drain waits for it.
        task = asyncio.current_task()
        assert task is not None
        requests_in_flight.add(task)
        try:
            await self._route()
        except asyncio.CancelledError:
            raise
        except McpError as exc:
            if not (self._sse_open or self.response_started):
                await send_error(self.send, exc)
        except Exception as exc:
            logger.exception("MCP endpoint failed")
            if not (self._sse_open or self.response_started):
                await send_error(self.send, exc)
        finally:
            requests_in_flight.discard(task)
            # The stream holds this consumer's ``send``: kept, the pair is a reference cycle, and every request's
            # consumer, with all it refers to, would wait for the garbage collector.
            self._post_stream = None

    async def _route(self) -> None:
        self.headers = scope_headers(self.scope)
        self.tenant: Tenant = self.scope[TENANT_SCOPE_KEY]
        # The tenant's named server the request is to (None: its default server).
        self.server: Server | None = self.scope.get(SERVER_SCOPE_KEY)
        # Who is calling, as tasks, sessions and sealed request states record it, and what the token grants.
        self.principal = principal_label(self.scope)
        self.client_address = asgi_client_address(self.scope)
        self.client_id = oauth_client_id(self.scope)
        self.granted = granted_scopes(self.scope)
        # Where links in questions to the person point (a connect page): the platform as this client reached it.
        self.caller = request_caller(self.scope, base_url=base_url_from_scope(self.scope))
        method = self.scope["method"]
        if method == "POST":
            await self._post()
        elif method in ("GET", "DELETE") and "mcp-session-id" not in self.headers:
            # Only handshake-era sessions have a GET stream or an end; the stateless era is POST only.
            await send_empty(self.send, 405, header_list([("Allow", "POST")]))
        elif method == "GET":
            await self._get()
        elif method == "DELETE":
            await self._delete()
        else:
            await send_empty(self.send, 405, header_list([("Allow", "GET, POST, DELETE")]))

    async def _session(self, *, required: bool = True) -> LegacySession | None:
        """The session named by Mcp-Session-Id. Raises TransportError (400 missing, 404 unknown)."""
        session_id = self.headers.get("mcp-session-id")
        if session_id is None:
            if required:
                raise TransportError("Bad Request: Mcp-Session-Id header is required")
            return None
        if not mcp_http.valid_session_id(session_id):
            raise TransportError("Bad Request: malformed Mcp-Session-Id")
        session = await session_cache.get(tenant_id=self.tenant.id, principal=self.principal, session_id=session_id)
        if (
            session is None
            or session.transport != LegacySession.Transport.STREAMABLE_HTTP
            # A session belongs to the server it was opened on: another server's URL does not find it.
            or session.server != self.server_slug
        ):
            raise TransportError("Session not found", http_status=404)
        header = self.headers.get("mcp-protocol-version", DEFAULT_HEADERLESS_VERSION)
        if not header_version_acceptable(header, session.protocol_version):
            raise TransportError(f"Bad Request: unsupported MCP-Protocol-Version {header!r}")
        return session

    # --- POST --------------------------------------------------------------------------------------

    def _post(self) -> Coroutine[Any, Any, None]:
        """The handler of this POST for its era, to be awaited (returned, not awaited here: no extra step on every
        request). Raises TransportError (415, 406) and the JSON-RPC parse errors."""
        if not mcp_http.is_json_content_type(self.headers.get("content-type")):
            raise TransportError("Unsupported Media Type: Content-Type must be application/json", http_status=415)
        if not mcp_http.accepts_json_and_sse(self.headers.get("accept")):
            raise TransportError(
                "Not Acceptable: Accept must list application/json and text/event-stream", http_status=406
            )
        messages, is_batch = jsonrpc.decode(self._body, allow_batch=True)
        single = None if is_batch else messages[0]
        if isinstance(single, (jsonrpc.Request, jsonrpc.Notification)) and is_stateless(
            method=single.method,
            params=single.params,
            has_session="mcp-session-id" in self.headers,
            protocol_header=self.headers.get("mcp-protocol-version"),
        ):
            return self._post_stateless(single)
        return self._post_handshake(messages, is_batch)

    async def _post_stateless(self, message: jsonrpc.Request | jsonrpc.Notification) -> None:
        """2026-07-28: this era defines no client notifications over HTTP; accept and ignore any."""
        if isinstance(message, jsonrpc.Notification):
            await send_empty(self.send, 202)
            return
        if message.method == LISTEN_METHOD:
            await self._listen(message)
            return
        await serve_stateless(
            send=self.send,
            tenant=self.tenant,
            server=server_identity(self.tenant, self.server),
            headers=self.headers,
            request=message,
            principal=self.principal,
            client_address=self.client_address,
            granted=self.granted,
            client_id=self.client_id,
            caller=self.caller,
            named_server=self.server,
        )

    @property
    def server_slug(self) -> str:
        return self.server.slug if self.server is not None else ""

    async def _listen(self, request: jsonrpc.Request) -> None:
        """2026-07-28 ``subscriptions/listen``: envelope errors as JSON with the request's id, else the stream."""
        try:
            envelope = open_envelope(method=request.method, params=request.params, headers=self.headers)
            subscription = parse_listen(request.params, request.id, envelope.client_capabilities)
            await rate_limits_check_requests(
                tenant=self.tenant,
                client_id=self.client_id,
                client_address=self.client_address,
                requests=[request],
                server=self.server,
            )
        except McpError as exc:
            await send_error(self.send, exc, request.id)
            return
        tasks = stateless_tasks(
            tenant=self.tenant, principal=self.principal, version=envelope.version, client_address=self.client_address
        )
        self._sse_open = True
        await serve_listen(
            send=self.send,
            subscription=subscription,
            tenant_id=self.tenant.id,
            tasks=tasks,
            access=StreamAccess.of(self.scope),
            lists=ServerLists.of(self.tenant, self.server),
        )

    # --- DELETE ------------------------------------------------------------------------------------

    async def _delete(self) -> None:
        session = await self._session()
        assert session is not None
        await sessions.legacy_session_close(session=session)
        await send_empty(self.send, 200)
