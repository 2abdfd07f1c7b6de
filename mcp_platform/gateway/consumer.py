"""The MCP endpoint ``/t/<tenant>/mcp`` (Streamable HTTP) as a Channels consumer.

Written on ``AsyncConsumer`` so a disconnect or a channel-layer message is handled while a response
streams: each HTTP request is served by its own asyncio task, and each JSON-RPC request by another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from channels.exceptions import StopConsumer

from mcp_core import http as mcp_http
from mcp_core import jsonrpc, sse
from mcp_core.env import Env
from mcp_core.envelope import is_stateless, open_envelope
from mcp_core.errors import InvalidRequest, McpError, RateLimited, TransportError, error_to_wire
from mcp_core.features.lifecycle import initialize_result, parse_initialize
from mcp_core.features.subscriptions import LISTEN_METHOD, parse_listen
from mcp_core.session import SessionState, SessionStateError
from mcp_core.versions import (
    DEFAULT_HEADERLESS_VERSION,
    V2025_11_25,
    allows_batches,
    at_least,
    header_version_acceptable,
)
from mcp_infra.conf import platform_settings
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import Inbox, send_to_group
from mcp_platform.gateway import sessions
from mcp_platform.gateway.base import GatewayConsumer
from mcp_platform.gateway.control import request_key, session_control
from mcp_platform.gateway.listen import serve_listen
from mcp_platform.gateway.middleware import TENANT_SCOPE_KEY, granted_scopes
from mcp_platform.gateway.models import LegacySession
from mcp_platform.gateway.observing import call_info
from mcp_platform.gateway.responses import (
    Send,
    header_list,
    send_chunk,
    send_empty,
    send_error,
    send_json,
    start_sse,
)
from mcp_platform.gateway.session_cache import session_cache
from mcp_platform.gateway.session_streams import SessionStreamMixin
from mcp_platform.gateway.stateless import serve_stateless, stateless_tasks
from mcp_platform.gateway.stream_access import StreamAccess
from mcp_platform.gateway.streams import PostStream, Sink, SinkOutbound, keep_running, run_request, start_run
from mcp_platform.jobs.models import RunOrigin
from mcp_platform.jobs.store import ToolRunStore
from mcp_platform.oauth.resource import principal_label
from mcp_platform.oauth.throttling import asgi_client_address
from mcp_platform.observe.calls import HTTP_SSE, STREAMABLE_HTTP, CallInfo, hooks_registered, observed_call
from mcp_platform.quotas.check import oauth_client_id, rate_limits_check_requests
from tenants.cache import tenant_cache
from tenants.events import catalog_group
from tenants.identity import server_identity
from tenants.models import Tenant

logger = logging.getLogger(__name__)


def scope_headers(scope: dict[str, Any]) -> dict[str, str]:
    """The request's header fields by lower-case name; a repeated field's values joined with ", "."""
    raw = scope.get("headers", [])
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in raw}
    if len(headers) == len(raw):
        return headers
    headers = {}
    for raw_name, raw_value in raw:
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


class SessionHooksImpl:
    """``mcp_core.env.SessionHooks`` backed by the durable session row."""

    def __init__(self, session: LegacySession) -> None:
        self._session = session

    async def set_log_level(self, level: str) -> None:
        await sessions.legacy_session_set_log_level(session=self._session, level=level)

    async def subscribe(self, uri: str) -> None:
        try:
            await sessions.legacy_session_subscribe(session=self._session, uri=uri)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None

    async def unsubscribe(self, uri: str) -> None:
        await sessions.legacy_session_unsubscribe(session=self._session, uri=uri)


def session_env(
    *,
    tenant: Tenant,
    session: LegacySession,
    sink: Sink,
    request: jsonrpc.Request,
    principal: str,
    client_address: str,
    granted: frozenset[str] | None,
) -> Env:
    params = request.params or {}
    meta = params.get("_meta")
    # 2025-11-25 tasks belong to the principal and the session that started them.
    tasks = None
    if at_least(session.protocol_version, V2025_11_25):
        client_info = session.client_info or {}
        tasks = ToolRunStore.bound(
            tenant_id=tenant.id,
            principal=principal,
            session_id=session.id,
            protocol_version=session.protocol_version,
            client_address=client_address,
            origin=RunOrigin(
                client_name=str(client_info.get("name") or ""),
                client_version=str(client_info.get("version") or ""),
                transport=HTTP_SSE if session.transport == LegacySession.Transport.HTTP_SSE else STREAMABLE_HTTP,
                request_id=str(request.id),
            ),
        )
    return Env(
        version=session.protocol_version,
        catalog=tenant_cache.catalog(tenant, granted),
        outbound=SinkOutbound(sink=sink, tenant_id=tenant.id, session_id=session.id),
        server=server_identity(tenant),
        client_capabilities=session.client_capabilities,
        log_level=session.log_level or None,
        page_size=platform_settings.PAGE_SIZE,
        session=SessionHooksImpl(session),
        meta=meta if isinstance(meta, dict) else {},
        tasks=tasks,
    )


async def deliver_client_messages(*, tenant_id: int, session: LegacySession, messages: list[jsonrpc.Message]) -> None:
    """Act on the client's notifications and its answers to server-to-client requests (on any process)."""
    for message in messages:
        if isinstance(message, jsonrpc.Notification):
            if message.method == "notifications/initialized":
                with contextlib.suppress(SessionStateError):
                    await sessions.legacy_session_mark_initialized(session=session)
            elif message.method == "notifications/cancelled":
                request_id = (message.params or {}).get("requestId")
                if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
                    key = request_key(tenant_id, session.id, request_id)
                    await session_control.cancel(key, (message.params or {}).get("reason"))
        elif isinstance(message, (jsonrpc.Response, jsonrpc.ErrorResponse)) and isinstance(message.id, str):
            group = groups.server_request_group(tenant_id, session.id, message.id)
            body: dict[str, Any] = (
                {"result": message.result} if isinstance(message, jsonrpc.Response) else {"error": message.error}
            )
            await send_to_group(group, body)


async def rate_limits_admit(
    send: Send,
    *,
    tenant: Tenant,
    client_id: str,
    client_address: str,
    requests: list[jsonrpc.Request],
    observe: Callable[[jsonrpc.Request], CallInfo],
) -> bool:
    """Count a POST's requests against the tenant's rate limits before any runs, so that a refusal is the whole
    response (429, ``Retry-After``, the JSON-RPC error with the request's id); False when it was refused. Every
    request of a refused POST is reported to the observation hooks as refused (``observe`` makes its
    ``CallInfo``): none of them runs, and the activity log and metrics count refusals as the stateless era does."""
    try:
        await rate_limits_check_requests(
            tenant=tenant, client_id=client_id, client_address=client_address, requests=requests
        )
    except RateLimited as exc:
        if hooks_registered():
            for request in requests:
                with observed_call(observe(request)) as call:
                    call.fail(exc)
        await send_error(send, exc, requests[0].id if len(requests) == 1 else None)
        return False
    return True


class McpConsumer(SessionStreamMixin, GatewayConsumer):
    """One HTTP request to a tenant's MCP endpoint."""

    _body = b""
    _task: asyncio.Task[None] | None = None
    _post_stream: PostStream | None = None
    # Set while this request's own task runs a session request: a disconnect must not cancel it.
    _running_inline = False
    # Set once the response belongs to a stream (started or about to be): errors then end up on it, not here.
    _sse_open = False
    # GET: following a POST stream (resumed), not holding the session's standalone stream.
    _following_post = False
    # When this resumed stream last told the stream's runner that it is followed (monotonic seconds).
    _marked_following = float("-inf")

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
            # The stream holds this consumer's ``send``: kept, the pair is a reference cycle, and every request's
            # consumer, with all it refers to, would wait for the garbage collector.
            self._post_stream = None

    async def _route(self) -> None:
        self.headers = scope_headers(self.scope)
        self.tenant: Tenant = self.scope[TENANT_SCOPE_KEY]
        # Who is calling, as tasks, sessions and sealed request states record it, and what the token grants.
        self.principal = principal_label(self.scope)
        self.client_address = asgi_client_address(self.scope)
        self.client_id = oauth_client_id(self.scope)
        self.granted = granted_scopes(self.scope)
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
        if session is None or session.transport != LegacySession.Transport.STREAMABLE_HTTP:
            raise TransportError("Session not found", http_status=404)
        header = self.headers.get("mcp-protocol-version", DEFAULT_HEADERLESS_VERSION)
        if not header_version_acceptable(header, session.protocol_version):
            raise TransportError(f"Bad Request: unsupported MCP-Protocol-Version {header!r}")
        return session

    def _call_info(self, request: jsonrpc.Request, session: LegacySession | None) -> CallInfo:
        """What the observation hooks are told about ``request`` of this handshake-era POST (``session`` None: an
        ``initialize``, or a request that names no session)."""
        return call_info(
            tenant_id=self.tenant.id,
            tenant_slug=self.tenant.slug,
            request=request,
            principal=self.principal,
            client_info=session.client_info if session is not None else None,
            protocol_version=session.protocol_version
            if session is not None
            else self.headers.get("mcp-protocol-version", ""),
            transport=STREAMABLE_HTTP,
            headers=self.headers,
            keep_arguments=self.tenant.activity_record_arguments,
        )

    # --- POST --------------------------------------------------------------------------------------

    async def _post(self) -> None:
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
            await self._post_stateless(single)
            return
        session = await self._session(required=False)
        if is_batch and (session is None or not allows_batches(session.protocol_version)):
            raise InvalidRequest("batches are not supported by this protocol version")
        if not await rate_limits_admit(
            self.send,
            tenant=self.tenant,
            client_id=self.client_id,
            client_address=self.client_address,
            requests=[m for m in messages if isinstance(m, jsonrpc.Request)],
            observe=lambda request: self._call_info(request, session),
        ):
            return
        if session is None:
            await self._post_without_session(messages)
            return
        if any(isinstance(m, jsonrpc.Request) and m.method == "initialize" for m in messages):
            raise InvalidRequest("This session is already initialized")
        await deliver_client_messages(
            tenant_id=self.tenant.id,
            session=session,
            messages=[m for m in messages if not isinstance(m, jsonrpc.Invalid)],
        )
        requests = [m for m in messages if isinstance(m, jsonrpc.Request)]
        invalid = [m for m in messages if isinstance(m, jsonrpc.Invalid)]
        if not requests and not invalid:
            await send_empty(self.send, 202)
            return
        stream = PostStream(
            send=self.send,
            tenant_id=self.tenant.id,
            session_id=session.id,
            request_ids=[request.id for request in requests],
            expected=len(requests) + len(invalid),
            batch=is_batch,
            priming=at_least(session.protocol_version, V2025_11_25),
            headers=header_list([("Mcp-Session-Id", session.id)]),
        )
        self._post_stream = stream
        for bad in invalid:
            await stream.response(jsonrpc.encode_error(bad.id, error_to_wire(bad.error)[1]))
        envs = [
            session_env(
                tenant=self.tenant,
                session=session,
                sink=stream,
                request=request,
                principal=self.principal,
                client_address=self.client_address,
                granted=self.granted,
            )
            for request in requests
        ]
        infos = [self._call_info(request, session) for request in requests]
        self._sse_open = True
        if len(requests) == 1:
            # The common case runs in this task: no second task and no hand-off. A disconnect then detaches the
            # stream instead of cancelling this task, so the run still outlives the connection.
            self._running_inline = True
            stream.adopt(keep_running(asyncio.current_task()))
            await run_request(
                request=requests[0],
                env=envs[0],
                sink=stream,
                tenant_id=self.tenant.id,
                session_id=session.id,
                info=infos[0],
            )
        else:
            for request, env, info in zip(requests, envs, infos, strict=True):
                stream.adopt(
                    start_run(
                        request=request,
                        env=env,
                        sink=stream,
                        tenant_id=self.tenant.id,
                        session_id=session.id,
                        info=info,
                    )
                )
        await stream.done.wait()

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
            server=server_identity(self.tenant),
            headers=self.headers,
            request=message,
            principal=self.principal,
            client_address=self.client_address,
            granted=self.granted,
            client_id=self.client_id,
        )

    async def _listen(self, request: jsonrpc.Request) -> None:
        """2026-07-28 ``subscriptions/listen``: envelope errors as JSON with the request's id, else the stream."""
        try:
            envelope = open_envelope(method=request.method, params=request.params, headers=self.headers)
            subscription = parse_listen(request.params, request.id, envelope.client_capabilities)
            await rate_limits_check_requests(
                tenant=self.tenant, client_id=self.client_id, client_address=self.client_address, requests=[request]
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
        )

    async def _post_without_session(self, messages: list[Any]) -> None:
        first = messages[0] if len(messages) == 1 else None
        if isinstance(first, jsonrpc.Request) and first.method == "initialize":
            await self._initialize(first)
            return
        raise TransportError("Bad Request: Mcp-Session-Id header is required")

    async def _initialize(self, request: jsonrpc.Request) -> None:
        try:
            version, capabilities, client_info = parse_initialize(request.params)
        except McpError as exc:
            await send_error(self.send, exc, request.id)
            return
        session = await sessions.legacy_session_create(
            tenant_id=self.tenant.id,
            principal=self.principal,
            transport=LegacySession.Transport.STREAMABLE_HTTP,
            state=SessionState.INITIALIZING,
            protocol_version=version,
            client_capabilities=capabilities,
            client_info=client_info,
        )
        await session_cache.remember(session)
        result = initialize_result(server_identity(self.tenant), version, tasks=True)
        await send_json(
            self.send,
            200,
            jsonrpc.encode_result(request.id, result),
            header_list([("Mcp-Session-Id", session.id)]),
        )

    # --- DELETE ------------------------------------------------------------------------------------

    async def _delete(self) -> None:
        session = await self._session()
        assert session is not None
        await sessions.legacy_session_close(session=session)
        await send_empty(self.send, 200)

    # --- GET: the standalone stream, or the resumption of any stream -------------------------------

    async def _get(self) -> None:
        if not mcp_http.accepts(self.headers.get("accept"), "text/event-stream"):
            raise TransportError("Not Acceptable: Accept must list text/event-stream", http_status=406)
        session = await self._session()
        assert session is not None
        self.session = session
        last_event_id = mcp_http.parse_last_event_id(self.headers.get("last-event-id"))
        self._closed = False
        self._inbox = Inbox()
        try:
            await self._get_stream(session, last_event_id)
        finally:
            await self._inbox.leave()

    async def _get_stream(self, session: LegacySession, last_event_id: str | None) -> None:
        if last_event_id is None:
            await self._standalone(sessions.new_token(), None)
            return
        parsed = sse.parse_event_id(last_event_id)
        kind = None if parsed is None else await sessions.stream_kind(session_id=session.id, stream_id=parsed[0])
        if parsed is None or kind is None:
            raise TransportError("Unknown Last-Event-ID", http_status=404)
        if kind == "standalone":
            await self._standalone(*parsed)
        else:
            await self._resume(*parsed)

    async def _open(self, stream_id: str, seq: int) -> None:
        """Start the SSE response of stream ``stream_id``, whose events up to ``seq`` the client has."""
        self._stream_id = stream_id
        self._seq = seq
        await start_sse(self.send, header_list([("Mcp-Session-Id", self.session.id)]))
        self._sse_open = True

    async def _resume(self, stream_id: str, after: int) -> None:
        """Replay a POST stream after ``after`` and follow it live until its last response.

        The process running the stream's requests keeps a lease on it; when that lease has lapsed (the process
        stopped), the requests still unanswered get ``sessions.RUN_LOST`` and the stream ends."""
        await self._inbox.join(groups.stream_group(self.tenant.id, self.session.id, stream_id))
        await self._open(stream_id, after)
        await send_chunk(self.send, sse.comment("resumed"))
        self._following_post = True
        await self._mark_following()
        if await self._catch_up():
            return
        await self._pump(self._inbox)

    async def _catch_up(self) -> bool:
        """Write what the stream stored since the last event written here (live messages are at most once), and
        end it in its runner's place if that runner is gone. True when the stream is finished."""
        if await self._write_stored_since():
            return True
        lapsed = await sessions.post_stream_end_if_lapsed(session_id=self.session.id, stream_id=self._stream_id)
        return lapsed and await self._write_stored_since()

    async def _write_stored_since(self) -> bool:
        """Write the stream's stored events after the last one written here; True when the stream is finished."""
        stored = await sessions.stream_events_after(
            session_id=self.session.id, stream_id=self._stream_id, seq=self._seq
        )
        for event in stored:
            if await self._write_stored(event.seq, event.payload, event.is_final):
                return True
        return False

    async def _write_stored(self, seq: int, payload: str, final: bool) -> bool:
        """Write a stored event unless already written (an empty one only marks the end); True when the stream is
        finished."""
        if seq > self._seq:
            self._seq = seq
            if payload:
                await send_chunk(self.send, sse.event(payload, id=sse.make_event_id(self._stream_id, seq)))
        if final:
            await self._close_stream()
            return True
        return False

    async def _mark_following(self) -> None:
        """Tell the process running the resumed stream's requests that a client still follows them (at most once a
        keep-alive: a busy stream never idles)."""
        now = time.monotonic()
        if now - self._marked_following >= platform_settings.SSE_KEEPALIVE:
            self._marked_following = now
            await sessions.post_stream_follow(session_id=self.session.id, stream_id=self._stream_id)

    async def _close_stream(self) -> None:
        if not self._closed:
            self._closed = True
            await send_chunk(self.send, b"", more=False)

    async def _standalone(self, stream_id: str, after: int | None) -> None:
        if not await sessions.standalone_stream_claim(session=self.session, stream_id=stream_id):
            raise TransportError("Conflict: this session already has an open GET stream", http_status=409)
        try:
            await self._inbox.join(catalog_group(self.tenant.id))
            with session_control.watching_close(self.tenant.id, self.session.id, self._session_closed):
                await self._standalone_stream(stream_id, after)
        finally:
            await sessions.standalone_stream_release(session_id=self.session.id, stream_id=stream_id)

    def _session_closed(self) -> None:
        self._inbox.put({"type": "mailbox.message", "kind": "closed"})

    async def _standalone_stream(self, stream_id: str, after: int | None) -> None:
        if after is None:
            await sessions.stream_event_append(
                session_id=self.session.id,
                stream_id=stream_id,
                seq=0,
                payload=sessions.STANDALONE_MARKER,
                is_final=False,
            )
            await self._open(stream_id, 0)
            if at_least(self.session.protocol_version, V2025_11_25):
                event_id = sse.make_event_id(stream_id, 0)
                await send_chunk(self.send, sse.priming(event_id, platform_settings.SSE_RETRY_MS))
            else:
                await send_chunk(self.send, sse.comment("stream open"))
        else:
            await self._open(stream_id, after)
            await send_chunk(self.send, sse.comment("resumed"))
            stored = await sessions.stream_events_after(session_id=self.session.id, stream_id=stream_id, seq=after)
            for event in stored:
                await self._write_stored(event.seq, event.payload, False)
        await self._pump(self._inbox)

    async def _idle(self) -> None:
        await send_chunk(self.send, sse.comment())
        if self._following_post:
            await self._mark_following()
            await self._catch_up()
        elif not await sessions.standalone_stream_renew(session_id=self.session.id, stream_id=self._stream_id):
            # The session ended (a lost signal), or another GET stream took over after this one's lease lapsed.
            await self._close_stream()

    async def _push(self, method: str, params: dict[str, Any]) -> None:
        """Store and send one unrelated server message on the standalone stream."""
        if self._closed:
            return
        self._seq += 1
        payload = jsonrpc.encode_notification(method, params).decode()
        await sessions.stream_event_append(
            session_id=self.session.id, stream_id=self._stream_id, seq=self._seq, payload=payload, is_final=False
        )
        await send_chunk(self.send, sse.event(payload, id=sse.make_event_id(self._stream_id, self._seq)))

    async def mailbox_message(self, message: dict[str, Any]) -> None:
        """The session ended (standalone stream), or a live event of the resumed stream arrived."""
        if self._closed:
            return
        if message.get("kind") == "closed":
            await self._close_stream()
        elif "seq" in message:
            await self._mark_following()
            await self._write_stored(int(message["seq"]), message["payload"], bool(message.get("final")))
