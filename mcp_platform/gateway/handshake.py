"""What a handshake-era session's requests need on either transport (Streamable HTTP and 2024-11-05 HTTP+SSE):
the request's header fields, a request's ``Env`` on its session, the client's messages acted on, and the rate-limit
admission of a POST."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from mcp_core import jsonrpc
from mcp_core.env import Env
from mcp_core.errors import InvalidRequest, RateLimited
from mcp_core.session import SessionStateError
from mcp_core.versions import V2025_11_25, at_least
from mcp_infra.conf import platform_settings
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import send_to_group
from mcp_platform.gateway import sessions
from mcp_platform.gateway.control import request_key, session_control
from mcp_platform.gateway.models import LegacySession
from mcp_platform.gateway.responses import Send, send_error
from mcp_platform.gateway.streams import Sink, SinkOutbound
from mcp_platform.jobs.models import RunOrigin
from mcp_platform.jobs.store import ToolRunStore
from mcp_platform.observe.calls import HTTP_SSE, STREAMABLE_HTTP, CallInfo, hooks_registered, observed_call
from mcp_platform.quotas.check import rate_limits_check_requests
from tenants.cache import tenant_cache
from tenants.connections.acting import Caller
from tenants.identity import server_identity
from tenants.models import Server, Tenant


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
    caller: Caller,
    named_server: Server | None = None,
) -> Env:
    """A request's ``Env`` on ``session``, opened on the tenant's server ``named_server`` (None: its default one)."""
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
                base_url=caller.base_url,
                server=session.server,
            ),
        )
    return Env(
        version=session.protocol_version,
        catalog=tenant_cache.catalog(tenant, granted, named_server),
        outbound=SinkOutbound(sink=sink, tenant_id=tenant.id, session_id=session.id),
        server=server_identity(tenant, named_server),
        client_capabilities=session.client_capabilities,
        log_level=session.log_level or None,
        page_size=platform_settings.PAGE_SIZE,
        session=SessionHooksImpl(session),
        meta=meta if isinstance(meta, dict) else {},
        tasks=tasks,
        caller=caller,
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
    server: Server | None = None,
) -> bool:
    """Count a POST's requests against the tenant's rate limits (and its server ``server``'s) before any runs, so
    that a refusal is the whole response (429, ``Retry-After``, the JSON-RPC error with the request's id); False
    when it was refused. Every
    request of a refused POST is reported to the observation hooks as refused (``observe`` makes its
    ``CallInfo``): none of them runs, and the activity log and metrics count refusals as the stateless era does."""
    try:
        await rate_limits_check_requests(
            tenant=tenant, client_id=client_id, client_address=client_address, requests=requests, server=server
        )
    except RateLimited as exc:
        if hooks_registered():
            for request in requests:
                with observed_call(observe(request)) as call:
                    call.fail(exc)
        await send_error(send, exc, requests[0].id if len(requests) == 1 else None)
        return False
    return True
