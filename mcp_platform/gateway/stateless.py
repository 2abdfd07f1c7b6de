"""The 2026-07-28 (stateless) side of the MCP endpoint: one POSTed request, answered on its own response.

No session and no stored events. The response is JSON until the handler sends a notification, then SSE that
carries only this request's progress and log messages before the result. The work runs in the HTTP request's
own task, so a client that closes the response cancels it (the handshake era lets it run on, detached).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings

from mcp_core import jsonrpc, sse
from mcp_core.caching import CacheHints
from mcp_core.dispatch import dispatch
from mcp_core.env import Env, ServerIdentity
from mcp_core.envelope import Envelope, open_envelope
from mcp_core.errors import ClientRequestFailed, McpError
from mcp_core.mrtr import InputPolicy
from mcp_core.request_state import derive_key
from mcp_infra.conf import platform_settings
from mcp_platform.gateway.observing import call_info
from mcp_platform.gateway.responses import (
    Headers,
    Send,
    send_chunk,
    send_json,
    start_sse,
    wire_error,
)
from mcp_platform.gateway.streams import drain_cut_off
from mcp_platform.jobs.models import RunOrigin
from mcp_platform.jobs.store import ToolRunStore
from mcp_platform.observe.calls import STREAMABLE_HTTP, observed_call
from mcp_platform.quotas.check import rate_limits_check
from tenants.cache import tenant_cache
from tenants.connections.acting import Caller
from tenants.models import Server, Tenant

logger = logging.getLogger(__name__)

REQUEST_STATE_PURPOSE = "mcp_platform.gateway.request_state"


class RequestStream:
    """``mcp_core.context.Outbound`` of one stateless request, and the writer of its one response."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._sse = False
        self._finished = False
        # Made by the first notification: most requests send none, and then nothing can race the response.
        self._lock: asyncio.Lock | None = None
        self._keepalive: asyncio.Task[None] | None = None

    def _guard(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        async with self._guard():
            if self._finished:
                return
            if not self._sse:
                self._sse = True
                await start_sse(self._send)
                self._keepalive = asyncio.create_task(self._keep_alive())
            await send_chunk(self._send, sse.event(jsonrpc.encode_notification(method, params)))

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """This era has no server-to-client requests: questions go through input_required results (MRTR), and a
        request that cannot carry one (tools/list, say) cannot ask."""
        raise ClientRequestFailed(f"{method} cannot be asked of a 2026-07-28 client during this request")

    async def release(self) -> None:
        """Streams of this era cannot be resumed: the connection stays open."""

    async def finish(self, payload: bytes, status: int, headers: Headers | None = None) -> None:
        """Send the response: the JSON body with ``status`` and ``headers``, or the last event of the SSE stream."""
        if self._lock is None:
            # No notification has started (one would have made the lock before its first await), and any that
            # starts from now on finds the stream finished.
            self._finished = True
            self.stop()
            await send_json(self._send, status, payload, headers)
            return
        async with self._lock:
            self._finished = True
            self.stop()
            if self._sse:
                await send_chunk(self._send, sse.event(payload))
                await send_chunk(self._send, b"", more=False)
            else:
                await send_json(self._send, status, payload, headers)

    def stop(self) -> None:
        if self._keepalive is not None:
            self._keepalive.cancel()

    async def _keep_alive(self) -> None:
        while True:
            await asyncio.sleep(platform_settings.SSE_KEEPALIVE)
            async with self._guard():
                if self._finished:
                    return
                await send_chunk(self._send, sse.comment())


def tenant_cache_hints(tenant: Tenant) -> CacheHints:
    """The cache hints of this tenant's cacheable results: its own where set, else the platform's."""
    ttl = tenant.cache_ttl_ms if tenant.cache_ttl_ms is not None else platform_settings.CACHE_TTL_MS
    return _cache_hints(ttl, tenant.cache_scope or platform_settings.CACHE_SCOPE)


@lru_cache(maxsize=64)
def _cache_hints(ttl_ms: int, scope: str) -> CacheHints:
    # Asked on every request; a handful of distinct values, and CacheHints is immutable.
    return CacheHints(ttl_ms=ttl_ms, scope=scope)


def request_state_keys() -> tuple[bytes, ...]:
    """The requestState keys: from SECRET_KEY (sealing and checking), then from each retired SECRET_KEY_FALLBACKS
    entry (checking only), so rotating the secret does not break a client mid-conversation."""
    return _derived_keys(settings.SECRET_KEY, tuple(getattr(settings, "SECRET_KEY_FALLBACKS", [])))


@lru_cache(maxsize=8)
def _derived_keys(secret: str, fallbacks: tuple[str, ...]) -> tuple[bytes, ...]:
    # Two HMACs per request otherwise; keyed by the secrets, so a changed setting derives afresh.
    return tuple(derive_key(key, REQUEST_STATE_PURPOSE) for key in (secret, *fallbacks))


def input_policy(tenant: Tenant, principal: str) -> InputPolicy:
    return InputPolicy(
        keys=request_state_keys(),
        now=time.time(),
        ttl=float(platform_settings.REQUEST_STATE_TTL),
        tenant=str(tenant.id),
        principal=principal,
    )


def stateless_tasks(
    *, tenant: Tenant, principal: str, version: str, client_address: str, origin: RunOrigin | None = None
) -> ToolRunStore:
    """The caller's tasks in this era: the principal's (no session; task ids are unguessable). ``origin``: the
    request a new task comes from."""
    return ToolRunStore.bound(
        tenant_id=tenant.id,
        principal=principal,
        session_id="",
        protocol_version=version,
        client_address=client_address,
        origin=origin,
    )


def stateless_env(
    *,
    tenant: Tenant,
    server: ServerIdentity,
    envelope: Envelope,
    stream: RequestStream,
    headers: Mapping[str, str],
    principal: str,
    client_address: str,
    granted: frozenset[str] | None,
    caller: Caller,
    request_id: str = "",
    named_server: Server | None = None,
) -> Env:
    client_info = envelope.client_info or {}
    origin = RunOrigin(
        client_name=str(client_info.get("name") or ""),
        client_version=str(client_info.get("version") or ""),
        transport=STREAMABLE_HTTP,
        request_id=request_id,
        base_url=caller.base_url,
        server=named_server.slug if named_server is not None else "",
    )
    return Env(
        version=envelope.version,
        catalog=tenant_cache.catalog(tenant, granted, named_server),
        outbound=stream,
        server=server,
        client_capabilities=envelope.client_capabilities,
        log_level=envelope.log_level,
        page_size=platform_settings.PAGE_SIZE,
        meta=envelope.meta,
        cache=tenant_cache_hints(tenant),
        headers=headers,
        input_policy=input_policy(tenant, principal),
        tasks=stateless_tasks(
            tenant=tenant, principal=principal, version=envelope.version, client_address=client_address, origin=origin
        ),
        caller=caller,
    )


async def serve_stateless(
    *,
    send: Send,
    tenant: Tenant,
    server: ServerIdentity,
    headers: Mapping[str, str],
    request: jsonrpc.Request,
    principal: str,
    client_address: str,
    granted: frozenset[str] | None,
    client_id: str,
    caller: Caller,
    named_server: Server | None = None,
) -> None:
    """Answer one stateless request for ``principal`` (``principal_label``: ``anonymous`` on a public tenant), who
    holds ``granted`` scopes (None on a public tenant) and calls from ``client_address`` through the OAuth client
    ``client_id`` ("" on a public tenant), to the tenant's server ``named_server`` (None: its default server); every
    error goes out with the request's id, its HTTP status and headers."""
    stream = RequestStream(send)
    try:
        envelope = open_envelope(method=request.method, params=request.params, headers=headers)
        env = stateless_env(
            tenant=tenant,
            server=server,
            envelope=envelope,
            stream=stream,
            headers=headers,
            principal=principal,
            client_address=client_address,
            granted=granted,
            caller=caller,
            request_id=str(request.id),
            named_server=named_server,
        )
        info = call_info(
            tenant_id=tenant.id,
            tenant_slug=tenant.slug,
            request=request,
            principal=principal,
            client_info=envelope.client_info,
            protocol_version=envelope.version,
            transport=STREAMABLE_HTTP,
            headers=headers,
            keep_arguments=tenant.activity_record_arguments,
            server=named_server.slug if named_server is not None else "",
        )
        async with observed_call(info) as call:
            # Inside the observation: a refusal is recorded as one.
            await rate_limits_check(
                tenant=tenant,
                request=request,
                client_id=client_id,
                client_address=client_address,
                server=named_server,
            )
            result = await dispatch(request.method, request.params, env)
            call.succeed(result)
        await stream.finish(jsonrpc.encode_result(request.id, result), 200)
    except asyncio.CancelledError:
        if (answer := drain_cut_off(request.id)) is None:
            raise
        await stream.finish(answer, 503)  # the server is stopping
    except Exception as exc:
        if not isinstance(exc, McpError):
            logger.exception("%s failed", request.method)
        status, error, extra = wire_error(exc)
        await stream.finish(jsonrpc.encode_error(request.id, error), status, extra)
    finally:
        stream.stop()
