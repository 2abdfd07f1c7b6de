"""Services and selectors for handshake-era sessions and their stored stream events."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone

from mcp_core.session import SessionEvent, SessionState, next_state
from mcp_core.text import storable
from mcp_platform.conf import platform_settings
from mcp_platform.gateway.models import LegacySession, StreamEvent

# last_seen_at is refreshed at most this often, so busy sessions do not write on every request.
_TOUCH_INTERVAL = timedelta(seconds=60)
MAX_SUBSCRIPTIONS = 1000


def new_token() -> str:
    """A cryptographically random identifier of visible ASCII (session and stream ids)."""
    return secrets.token_urlsafe(24)


async def legacy_session_create(
    *,
    tenant_id: int,
    principal: str,
    transport: str,
    state: SessionState,
    protocol_version: str = "",
    client_capabilities: dict[str, Any] | None = None,
    client_info: dict[str, Any] | None = None,
) -> LegacySession:
    return await LegacySession.objects.acreate(
        id=new_token(),
        tenant_id=tenant_id,
        principal=principal,
        transport=transport,
        state=state.value,
        protocol_version=protocol_version,
        client_capabilities=client_capabilities or {},
        client_info=client_info or {},
    )


async def legacy_session_get(*, tenant_id: int, principal: str, session_id: str) -> LegacySession | None:
    """The open, unexpired session with this id in this tenant, started by this principal (one query), refreshing
    its idle clock. A session id presented with another principal's token is not found: ids are not credentials."""
    session = (
        await LegacySession.objects.filter(tenant_id=tenant_id, principal=principal, id=session_id)
        .exclude(state=SessionState.CLOSED.value)
        .afirst()
    )
    if session is None:
        return None
    now = timezone.now()
    if now - session.last_seen_at > timedelta(seconds=platform_settings.SESSION_IDLE_TIMEOUT):
        await legacy_session_close(session=session)
        return None
    if now - session.last_seen_at > _TOUCH_INTERVAL:
        await LegacySession.objects.filter(pk=session.pk).aupdate(last_seen_at=now)
    return session


async def legacy_session_initialize(
    *,
    session: LegacySession,
    protocol_version: str,
    client_capabilities: dict[str, Any],
    client_info: dict[str, Any],
) -> None:
    """Record the handshake of a session created by a 2024-11-05 SSE connection. Raises SessionStateError."""
    state = next_state(SessionState(session.state), SessionEvent.INITIALIZE)
    session.state = state.value
    session.protocol_version = protocol_version
    session.client_capabilities = client_capabilities
    session.client_info = client_info
    await session.asave(update_fields=["state", "protocol_version", "client_capabilities", "client_info"])


async def legacy_session_mark_initialized(*, session: LegacySession) -> None:
    """Apply ``notifications/initialized``. Raises SessionStateError when the session was never initialized."""
    state = next_state(SessionState(session.state), SessionEvent.INITIALIZED)
    if state.value != session.state:
        session.state = state.value
        await LegacySession.objects.filter(pk=session.pk).aupdate(state=state.value)


async def legacy_session_close(*, session: LegacySession) -> None:
    await LegacySession.objects.filter(pk=session.pk).aupdate(state=SessionState.CLOSED.value)
    session.state = SessionState.CLOSED.value
    from mcp_platform.gateway.tasks import legacy_session_purge

    await sync_to_async(legacy_session_purge.delay)(session.pk)


async def legacy_session_set_log_level(*, session: LegacySession, level: str) -> None:
    session.log_level = level
    await LegacySession.objects.filter(pk=session.pk).aupdate(log_level=level)


def _change_subscriptions(session_id: str, uri: str, add: bool) -> list[str]:
    if not storable(uri):
        # Such a URI names no resource: nothing to subscribe to, and never subscribed.
        if add:
            raise ValueError("a resource URI cannot contain U+0000")
        return list(LegacySession.objects.get(pk=session_id).subscriptions)
    with transaction.atomic():
        locked = LegacySession.objects.select_for_update().get(pk=session_id)
        current = [u for u in locked.subscriptions if u != uri]
        if add:
            if len(current) >= MAX_SUBSCRIPTIONS:
                raise ValueError(f"a session may hold at most {MAX_SUBSCRIPTIONS} subscriptions")
            current.append(uri)
        locked.subscriptions = current
        locked.save(update_fields=["subscriptions"])
        return current


async def legacy_session_subscribe(*, session: LegacySession, uri: str) -> None:
    """Raises ValueError when the session already holds the maximum number of subscriptions."""
    session.subscriptions = await sync_to_async(_change_subscriptions)(session.pk, uri, True)


async def legacy_session_unsubscribe(*, session: LegacySession, uri: str) -> None:
    session.subscriptions = await sync_to_async(_change_subscriptions)(session.pk, uri, False)


async def legacy_session_subscriptions(*, session_id: str) -> list[str]:
    row = await LegacySession.objects.filter(pk=session_id).values_list("subscriptions", flat=True).afirst()
    return list(row or [])


async def standalone_stream_claim(*, session: LegacySession, stream_id: str) -> bool:
    """Take the session's one standalone GET stream unless a live one holds it (its lease is fresh)."""
    now = timezone.now()
    stale_before = now - timedelta(seconds=platform_settings.SSE_KEEPALIVE * 2 + 5)
    free = LegacySession.objects.filter(pk=session.pk).filter(
        standalone_stream_id="",
    ) | LegacySession.objects.filter(pk=session.pk, standalone_seen_at__lt=stale_before)
    claimed = await free.aupdate(standalone_stream_id=stream_id, standalone_seen_at=now)
    return claimed == 1


async def standalone_stream_renew(*, session_id: str, stream_id: str) -> None:
    await LegacySession.objects.filter(pk=session_id, standalone_stream_id=stream_id).aupdate(
        standalone_seen_at=timezone.now()
    )


async def standalone_stream_release(*, session_id: str, stream_id: str) -> None:
    await LegacySession.objects.filter(pk=session_id, standalone_stream_id=stream_id).aupdate(
        standalone_stream_id="", standalone_seen_at=None
    )


@dataclass(frozen=True)
class StoredEvent:
    seq: int
    payload: str
    is_final: bool


async def stream_event_append(*, session_id: str, stream_id: str, seq: int, payload: str, is_final: bool) -> None:
    """Store one event before it is sent. Raises IntegrityError if that seq was already stored."""
    await StreamEvent.objects.acreate(
        session_id=session_id, stream_id=stream_id, seq=seq, payload=payload, is_final=is_final
    )


STANDALONE_MARKER = "standalone"


async def stream_kind(*, session_id: str, stream_id: str) -> str | None:
    """``"standalone"`` for a session's GET stream, ``"post"`` for a POST response stream, None if unknown."""
    opening = (
        await StreamEvent.objects.filter(session_id=session_id, stream_id=stream_id, seq=0)
        .values_list("payload", flat=True)
        .afirst()
    )
    if opening is None:
        return None
    return "standalone" if opening == STANDALONE_MARKER else "post"


async def stream_events_after(*, session_id: str, stream_id: str, seq: int) -> list[StoredEvent]:
    rows = StreamEvent.objects.filter(session_id=session_id, stream_id=stream_id, seq__gt=seq).order_by("seq")
    return [StoredEvent(r.seq, r.payload, r.is_final) async for r in rows.only("seq", "payload", "is_final")]


def stream_events_purge(*, older_than: timedelta) -> int:
    deleted, _ = StreamEvent.objects.filter(created_at__lt=timezone.now() - older_than).delete()
    return deleted


def legacy_sessions_purge_idle(*, idle_for: timedelta) -> int:
    deleted, _ = LegacySession.objects.filter(last_seen_at__lt=timezone.now() - idle_for).delete()
    return deleted
