"""A POST of the handshake era on the Streamable HTTP endpoint: ``initialize`` opens a session; a session's POST
delivers the client's messages and answers its requests on one stream that outlives the connection."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from mcp_core import jsonrpc
from mcp_core.env import Env
from mcp_core.errors import InvalidRequest, McpError, TransportError, error_to_wire
from mcp_core.features.lifecycle import initialize_result, parse_initialize
from mcp_core.session import SessionState
from mcp_core.versions import V2025_11_25, allows_batches, at_least
from mcp_platform.gateway import sessions
from mcp_platform.gateway.handshake import deliver_client_messages, rate_limits_admit, session_env
from mcp_platform.gateway.models import LegacySession
from mcp_platform.gateway.observing import call_info
from mcp_platform.gateway.responses import Send, header_list, send_empty, send_error, send_json
from mcp_platform.gateway.session_cache import session_cache
from mcp_platform.gateway.streams import PostStream, keep_running, run_request, start_run
from mcp_platform.observe.calls import STREAMABLE_HTTP, CallInfo
from tenants.connections.acting import Caller
from tenants.identity import server_identity
from tenants.models import Server, Tenant


class HandshakePostMixin:
    """For the Streamable HTTP consumer: ``_post_handshake`` serves a POST that is not of the stateless era."""

    send: Send
    headers: dict[str, str]
    tenant: Tenant
    server: Server | None
    principal: str
    client_address: str
    client_id: str
    granted: frozenset[str] | None
    caller: Caller
    _sse_open: bool
    _post_stream: PostStream | None = None
    # Set while this request's own task runs a session request: a disconnect must not cancel it.
    _running_inline = False

    if TYPE_CHECKING:

        async def _session(self, *, required: bool = True) -> LegacySession | None: ...

        @property
        def server_slug(self) -> str: ...

    async def _post_handshake(self, messages: list[Any], is_batch: bool) -> None:
        """Admit the POST's requests, act on the client's messages, and answer the requests on one stream."""
        session = await self._session(required=False)
        if is_batch and (session is None or not allows_batches(session.protocol_version)):
            raise InvalidRequest("batches are not supported by this protocol version")
        requests = [m for m in messages if isinstance(m, jsonrpc.Request)]
        if not await rate_limits_admit(
            self.send,
            tenant=self.tenant,
            client_id=self.client_id,
            client_address=self.client_address,
            requests=requests,
            observe=lambda request: self._call_info(request, session),
            server=self.server,
        ):
            return
        if session is None:
            await self._post_without_session(messages)
            return
        if any(request.method == "initialize" for request in requests):
            raise InvalidRequest("This session is already initialized")
        invalid = [m for m in messages if isinstance(m, jsonrpc.Invalid)]
        await deliver_client_messages(
            tenant_id=self.tenant.id,
            session=session,
            messages=[m for m in messages if not isinstance(m, jsonrpc.Invalid)] if invalid else messages,
        )
        if not requests and not invalid:
            await send_empty(self.send, 202)
            return
        stream = self._post_stream_open(session, requests, len(invalid), is_batch)
        for bad in invalid:
            await stream.response(jsonrpc.encode_error(bad.id, error_to_wire(bad.error)[1]))
        if len(requests) == 1:
            request = requests[0]
            env = self._request_env(session, stream, request)
            info = self._call_info(request, session)
            self._sse_open = True
            # The common case runs in this task: no second task and no hand-off. A disconnect then detaches the
            # stream instead of cancelling this task, so the run still outlives the connection.
            self._running_inline = True
            stream.adopt(keep_running(asyncio.current_task()))
            await run_request(
                request=request, env=env, sink=stream, tenant_id=self.tenant.id, session_id=session.id, info=info
            )
        else:
            self._runs_start(session, stream, requests)
        await stream.done.wait()

    def _post_stream_open(
        self, session: LegacySession, requests: list[jsonrpc.Request], invalid: int, is_batch: bool
    ) -> PostStream:
        """The stream that carries this POST's responses (``invalid``: how many messages are answered with an
        error without running); this consumer lets it go when the request ends."""
        stream = PostStream(
            send=self.send,
            tenant_id=self.tenant.id,
            session_id=session.id,
            request_ids=[request.id for request in requests],
            expected=len(requests) + invalid,
            batch=is_batch,
            priming=at_least(session.protocol_version, V2025_11_25),
            headers=header_list([("Mcp-Session-Id", session.id)]),
        )
        self._post_stream = stream
        return stream

    def _request_env(self, session: LegacySession, stream: PostStream, request: jsonrpc.Request) -> Env:
        return session_env(
            tenant=self.tenant,
            session=session,
            sink=stream,
            request=request,
            principal=self.principal,
            client_address=self.client_address,
            granted=self.granted,
            caller=self.caller,
            named_server=self.server,
        )

    def _runs_start(self, session: LegacySession, stream: PostStream, requests: list[jsonrpc.Request]) -> None:
        """A batch: each request runs in a task of its own, all of them answering on the one stream."""
        envs = [self._request_env(session, stream, request) for request in requests]
        infos = [self._call_info(request, session) for request in requests]
        self._sse_open = True
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
            server=self.server_slug,
        )

    async def _post_without_session(self, messages: list[Any]) -> None:
        """A POST naming no session: only an ``initialize`` on its own is served."""
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
            server=self.server_slug,
        )
        await session_cache.remember(session)
        result = initialize_result(server_identity(self.tenant, self.server), version, tasks=True)
        await send_json(
            self.send,
            200,
            jsonrpc.encode_result(request.id, result),
            header_list([("Mcp-Session-Id", session.id)]),
        )
