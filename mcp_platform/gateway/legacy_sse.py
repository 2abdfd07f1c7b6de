"""The 2024-11-05 HTTP+SSE transport for old clients: ``GET /t/<tenant>/sse`` and ``POST …/messages`` (under
``/t/<tenant>/s/<server>/`` for a named server).

The GET stream's first event names the endpoint to POST to; every response and server message of the
session then travels on that stream, whichever process handled the POST.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.exceptions import StopConsumer

from mcp_core import http as mcp_http
from mcp_core import jsonrpc, sse
from mcp_core.errors import InvalidRequest, McpError, TransportError, error_to_wire
from mcp_core.features.lifecycle import initialize_result, parse_initialize
from mcp_core.session import SessionState, SessionStateError
from mcp_infra.addresses import MESSAGES, base_url_from_scope, endpoint_url
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import Inbox
from mcp_platform.gateway import sessions
from mcp_platform.gateway.base import GatewayConsumer
from mcp_platform.gateway.drain import ending_on_drain
from mcp_platform.gateway.handshake import deliver_client_messages, rate_limits_admit, scope_headers, session_env
from mcp_platform.gateway.middleware import SERVER_SCOPE_KEY, TENANT_SCOPE_KEY, granted_scopes
from mcp_platform.gateway.models import LegacySession
from mcp_platform.gateway.observing import call_info
from mcp_platform.gateway.responses import send_body, send_chunk, send_empty, send_error, start_sse, wire_error
from mcp_platform.gateway.server_lists import ServerLists
from mcp_platform.gateway.session_cache import session_cache
from mcp_platform.gateway.session_streams import SessionStreamMixin
from mcp_platform.gateway.streams import SessionSink, start_run
from mcp_platform.oauth.resource import principal_label, request_caller
from mcp_platform.oauth.throttling import asgi_client_address
from mcp_platform.observe.calls import HTTP_SSE, CallInfo
from mcp_platform.quotas.check import oauth_client_id
from tenants.events import catalog_group
from tenants.identity import server_identity
from tenants.models import Server, Tenant

logger = logging.getLogger(__name__)


class LegacySseConsumer(SessionStreamMixin, GatewayConsumer):
    """``GET /t/<tenant>/sse``: opens a session and carries all of its server-to-client messages."""

    _task: asyncio.Task[None] | None = None

    async def http_request(self, message: dict[str, Any]) -> None:
        self._closed = False
        self._task = asyncio.create_task(self._serve())

    async def http_disconnect(self, message: dict[str, Any]) -> None:
        if self._task is not None:
            self._task.cancel()
        session = getattr(self, "session", None)
        if session is not None:
            await sessions.legacy_session_close(session=session)
        raise StopConsumer()

    async def _serve(self) -> None:
        try:
            await self._stream()
        except Exception as exc:
            # Before the stream starts (the session could not be stored: the database is away), the answer is an
            # error response (503 with Retry-After for an unreachable database); after, the stream just ends.
            if not isinstance(exc, McpError):
                logger.exception("2024-11-05 SSE endpoint failed")
            if not self.response_started:
                await send_error(self.send, exc)

    async def _stream(self) -> None:
        if self.scope["method"] != "GET":
            await send_empty(self.send, 405, [(b"allow", b"GET")])
            return
        if not mcp_http.accepts(scope_headers(self.scope).get("accept"), "text/event-stream"):
            await send_error(self.send, TransportError("Not Acceptable: text/event-stream", http_status=406))
            return
        tenant = self.tenant = self.scope[TENANT_SCOPE_KEY]
        server: Server | None = self.scope.get(SERVER_SCOPE_KEY)
        server_slug = server.slug if server is not None else ""
        self.session = await sessions.legacy_session_create(
            tenant_id=tenant.pk,
            principal=principal_label(self.scope),
            transport=LegacySession.Transport.HTTP_SSE,
            state=SessionState.NEW,
            server=server_slug,
        )
        inbox = Inbox()
        await inbox.join(groups.session_group(tenant.pk, self.session.pk), catalog_group(tenant.pk))
        try:
            self._lists = ServerLists.of(tenant, server)
            if self._lists is not None:
                await self._lists.start()
            # Ends last when the process drains: it carries the answers of the requests this process still runs.
            with ending_on_drain(inbox, last=True):
                await start_sse(self.send)
                messages = endpoint_url("", tenant.slug, MESSAGES, server_slug)
                endpoint = f"{messages}?session_id={self.session.pk}"
                await send_chunk(self.send, sse.event(endpoint, event="endpoint"))
                await self._pump(inbox)
        finally:
            await inbox.leave()

    async def _write(self, payload: str) -> None:
        if not self._closed:
            await send_chunk(self.send, sse.event(payload, event="message"))

    async def _push(self, method: str, params: dict[str, Any]) -> None:
        await self._write(jsonrpc.encode_notification(method, params).decode())

    async def _idle(self) -> None:
        await send_chunk(self.send, sse.comment())

    async def mailbox_message(self, message: dict[str, Any]) -> None:
        if message.get("kind") == "message":
            await self._write(message["payload"])
        elif message.get("kind") == "closed":
            await self._close_stream()

    async def _close_stream(self) -> None:
        if not self._closed:
            self._closed = True
            await send_chunk(self.send, b"", more=False)


class LegacyMessagesConsumer(GatewayConsumer):
    """``POST /t/<tenant>/messages?session_id=…``: accepted at once, answered on the session's stream."""

    async def http_request(self, message: dict[str, Any]) -> None:
        # The gateway middleware hands the whole (bounded) body over in this one message.
        self._body = message.get("body", b"")
        self._task = asyncio.create_task(self._serve())

    async def http_disconnect(self, message: dict[str, Any]) -> None:
        raise StopConsumer()

    async def _serve(self) -> None:
        try:
            await self._handle()
        except McpError as exc:
            if not self.response_started:
                await send_error(self.send, exc)
        except Exception as exc:
            logger.exception("legacy messages endpoint failed")
            # After the 202 the answer belongs on the session's stream (see _initialize), not on this response.
            if not self.response_started:
                await send_error(self.send, exc)

    async def _handle(self) -> None:
        if self.scope["method"] != "POST":
            await send_empty(self.send, 405, [(b"allow", b"POST")])
            return
        if not mcp_http.is_json_content_type(scope_headers(self.scope).get("content-type")):
            raise TransportError("Unsupported Media Type: Content-Type must be application/json", http_status=415)
        tenant: Tenant = self.scope[TENANT_SCOPE_KEY]
        server: Server | None = self.scope.get(SERVER_SCOPE_KEY)
        server_slug = server.slug if server is not None else ""
        principal = principal_label(self.scope)
        session_id = parse_qs(self.scope.get("query_string", b"").decode("latin-1")).get("session_id", [""])[0]
        session = None
        if mcp_http.valid_session_id(session_id):
            session = await session_cache.get(tenant_id=tenant.pk, principal=principal, session_id=session_id)
        if session is None or session.transport != LegacySession.Transport.HTTP_SSE or session.server != server_slug:
            raise TransportError("Session not found", http_status=404)
        messages, _ = jsonrpc.decode(self._body, allow_batch=False)
        requests = [m for m in messages if isinstance(m, jsonrpc.Request)]

        def info_of(request: jsonrpc.Request) -> CallInfo:
            # What the activity log and metrics record of one call on this session, refused or run.
            return call_info(
                tenant_id=tenant.pk,
                tenant_slug=tenant.slug,
                request=request,
                principal=principal,
                client_info=session.client_info,
                protocol_version=session.protocol_version,
                transport=HTTP_SSE,
                headers=scope_headers(self.scope),
                keep_arguments=tenant.activity_record_arguments,
                server=server_slug,
            )

        # Counted before the 202, so a refusal is this POST's answer (429, Retry-After), not an event on the stream.
        if not await rate_limits_admit(
            self.send,
            tenant=tenant,
            client_id=oauth_client_id(self.scope),
            client_address=asgi_client_address(self.scope),
            requests=requests,
            observe=info_of,
            server=server,
        ):
            return
        await send_body(self.send, 202, b"Accepted", content_type="text/plain")
        sink = SessionSink(tenant_id=tenant.pk, session_id=session.pk)
        caller = request_caller(self.scope, base_url=base_url_from_scope(self.scope))
        for message in messages:
            if isinstance(message, jsonrpc.Request) and message.method == "initialize":
                await self._initialize(tenant, server, session, sink, message)
            elif isinstance(message, jsonrpc.Request):
                if session.state == SessionState.NEW.value:
                    error = error_to_wire(InvalidRequest("The session is not initialized"))[1]
                    await sink.message(jsonrpc.encode_error(message.id, error))
                    continue
                env = session_env(
                    tenant=tenant,
                    session=session,
                    sink=sink,
                    request=message,
                    principal=principal,
                    client_address=asgi_client_address(self.scope),
                    granted=granted_scopes(self.scope),
                    caller=caller,
                    named_server=server,
                )
                info = info_of(message)
                start_run(request=message, env=env, sink=sink, tenant_id=tenant.pk, session_id=session.pk, info=info)
            elif not isinstance(message, jsonrpc.Invalid):
                await deliver_client_messages(tenant_id=tenant.pk, session=session, messages=[message])

    async def _initialize(
        self,
        tenant: Tenant,
        server: Server | None,
        session: LegacySession,
        sink: SessionSink,
        request: jsonrpc.Request,
    ) -> None:
        try:
            version, capabilities, client_info = parse_initialize(request.params)
            try:
                await sessions.legacy_session_initialize(
                    session=session,
                    protocol_version=version,
                    client_capabilities=capabilities,
                    client_info=client_info,
                )
            except SessionStateError as exc:
                raise InvalidRequest(str(exc)) from None
        except McpError as exc:
            await sink.message(jsonrpc.encode_error(request.id, error_to_wire(exc)[1]))
            return
        except Exception as exc:
            # The POST was answered 202 already: the client waits for this answer on its stream, so it gets one.
            logger.exception("legacy initialize failed")
            await sink.message(jsonrpc.encode_error(request.id, wire_error(exc)[1]))
            return
        result = initialize_result(server_identity(tenant, server), version, tasks=True)
        await sink.message(jsonrpc.encode_result(request.id, result))
