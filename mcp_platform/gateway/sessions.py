"""Services and selectors for handshake-era sessions and their stored stream events."""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from mcp_core import jsonrpc
from mcp_core.errors import InternalError, error_to_wire
from mcp_core.session import SessionEvent, SessionState, next_state
from mcp_core.text import storable
from mcp_infra.conf import platform_settings
from mcp_platform.gateway import session_rows
from mcp_platform.gateway.models import LegacySession, StreamEvent

# last_seen_at is refreshed at most this often, so busy sessions do not write on every request.
TOUCH_INTERVAL = timedelta(seconds=60)
MAX_SUBSCRIPTIONS = 1000

logger = logging.getLogger(__name__)


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
    server: str = "",
) -> LegacySession:
    """Store a new session on the tenant's server ``server`` ("" its default one): one statement holding everything
    its requests need."""
    now = timezone.now()
    session = LegacySession(
        id=new_token(),
        tenant_id=tenant_id,
        principal=principal,
        server=server,
        transport=transport,
        state=state.value,
        protocol_version=protocol_version,
        client_capabilities=client_capabilities or {},
        client_info=client_info or {},
        created_at=now,
        last_seen_at=now,
    )
    await session_rows.insert(session)
    return session


async def legacy_session_get(*, tenant_id: int, principal: str, session_id: str) -> LegacySession | None:
    """The open, unexpired session with this id in this tenant, started by this principal (one query), refreshing
    its idle clock. A session id presented with another principal's token is not found: ids are not credentials."""
    session = await session_rows.find_open(tenant_id=tenant_id, principal=principal, session_id=session_id)
    if session is None:
        return None
    now = timezone.now()
    if now - session.last_seen_at > timedelta(seconds=platform_settings.SESSION_IDLE_TIMEOUT):
        await legacy_session_close(session=session)
        return None
    if now - session.last_seen_at > TOUCH_INTERVAL:
        await legacy_session_touch(session_id=session.pk, now=now)
        session.last_seen_at = now
    return session


async def legacy_sessions_taking_urls(*, tenant_id: int, user_id: int, limit: int) -> list[str]:
    """The person's sessions in the tenant (through any client) that can hear a URL-mode elicitation's completion:
    open, with a stream that carries the session's messages (a live standalone GET stream, or the 2024-11-05 SSE
    connection), of a client that declared ``elicitation.url``; the ``limit`` used most recently, newest first."""
    now = timezone.now()
    rows = (
        LegacySession.objects.filter(
            tenant_id=tenant_id,
            principal__startswith=f"user:{int(user_id)} client:",
            state__in=[SessionState.INITIALIZING.value, SessionState.READY.value],
            last_seen_at__gte=now - timedelta(seconds=platform_settings.SESSION_IDLE_TIMEOUT),
            client_capabilities__elicitation__has_key="url",
        )
        # As ``capability_declared``: a false or null flag declares nothing.
        .exclude(client_capabilities__elicitation__url=False)
        .exclude(client_capabilities__elicitation__url=None)
        .filter(Q(transport=LegacySession.Transport.HTTP_SSE) | Q(standalone_seen_at__gte=lease_stale_before(now)))
        .order_by("-last_seen_at")
        .values_list("id", flat=True)
    )
    return [session_id async for session_id in rows[:limit]]


async def legacy_session_touch(*, session_id: str, now: datetime) -> None:
    await session_rows.update(session_id, last_seen_at=now)


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
    """Apply ``notifications/initialized``. Raises SessionStateError when the session was never initialized.

    Kept in memory only: no request behaves differently before or after it, so the row keeps what matters
    across processes (whether the handshake was answered, and whether the session ended) and set-up costs one
    statement."""
    session.state = next_state(SessionState(session.state), SessionEvent.INITIALIZED).value


async def legacy_session_close(*, session: LegacySession) -> None:
    """End the session: one statement, then every process drops it and its GET stream ends. Its row and stored
    events go with the periodic purge (``legacy_sessions_purge_idle``)."""
    session.state = SessionState.CLOSED.value
    await session_rows.update(session.pk, state=SessionState.CLOSED.value)
    await _changed(session, closed=True)


async def legacy_session_set_log_level(*, session: LegacySession, level: str) -> None:
    session.log_level = level
    await session_rows.update(session.pk, log_level=level)
    await _changed(session)


async def _changed(session: LegacySession, *, closed: bool = False) -> None:
    """Other processes remember sessions (``session_cache``): tell them this one changed. Never raises: a lost
    signal costs at most ``SESSION_CACHE_TTL`` of staleness there."""
    from mcp_platform.gateway.control import session_control

    try:
        await session_control.session_changed(session.tenant_id, session.pk, closed=closed)
    except Exception:
        logger.warning("could not signal the change of session %s", session.pk[:8], exc_info=True)


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


def lease_stale_before(now: datetime) -> datetime:
    """A stream's lease renewed before this has lapsed: its holder missed two keep-alives (plus slack)."""
    return now - timedelta(seconds=platform_settings.SSE_KEEPALIVE * 2 + 5)


async def standalone_stream_claim(*, session: LegacySession, stream_id: str) -> bool:
    """Take the session's one standalone GET stream unless a live one holds it (its lease is fresh)."""
    now = timezone.now()
    stale_before = lease_stale_before(now)
    free = LegacySession.objects.filter(pk=session.pk).filter(
        standalone_stream_id="",
    ) | LegacySession.objects.filter(pk=session.pk, standalone_seen_at__lt=stale_before)
    claimed = await free.aupdate(standalone_stream_id=stream_id, standalone_seen_at=now)
    return claimed == 1


async def standalone_stream_renew(*, session_id: str, stream_id: str) -> bool:
    """Renew the GET stream's lease; False when the session ended or another stream holds the lease now."""
    renewed = (
        await LegacySession.objects.filter(pk=session_id, standalone_stream_id=stream_id)
        .exclude(state=SessionState.CLOSED.value)
        .aupdate(standalone_seen_at=timezone.now())
    )
    return renewed == 1


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

# What the requests of a POST stream whose process stopped get instead of their answers: the call may have had
# side effects, so the platform does not run it again on its own; the client decides.
RUN_LOST = InternalError(
    "The server running this request stopped before answering; its outcome is unknown. "
    "Send the request again if it is safe to repeat.",
    data={"reason": "server_stopped"},
)


async def post_stream_open(*, session_id: str, stream_id: str, request_ids: list[str | int]) -> None:
    """Store the opening event of a POST response stream: the ids of the requests it answers, and the lease of
    the process running them (``post_stream_renew`` keeps it fresh)."""
    await StreamEvent.objects.acreate(
        session_id=session_id,
        stream_id=stream_id,
        seq=0,
        payload=json.dumps(request_ids),
        is_final=False,
        run_seen_at=timezone.now(),
    )


async def post_stream_renew(*, session_id: str, stream_id: str) -> bool:
    """Renew the running process's lease; False when a resumer already ended the stream in its place."""
    renewed = await StreamEvent.objects.filter(
        session_id=session_id, stream_id=stream_id, seq=0, run_seen_at__isnull=False
    ).aupdate(run_seen_at=timezone.now())
    return renewed == 1


async def post_stream_follow(*, session_id: str, stream_id: str) -> None:
    """A client follows the POST stream (resumed it): its requests still have someone to answer."""
    await StreamEvent.objects.filter(session_id=session_id, stream_id=stream_id, seq=0).aupdate(
        followed_at=timezone.now()
    )


async def post_stream_followed(*, session_id: str, stream_id: str, within: float) -> bool:
    """Whether a resuming client followed the stream in the last ``within`` seconds."""
    since = timezone.now() - timedelta(seconds=within)
    return await StreamEvent.objects.filter(
        session_id=session_id, stream_id=stream_id, seq=0, followed_at__gte=since
    ).aexists()


async def session_stream_event_count(*, session_id: str) -> int:
    """How many events the session's streams store."""
    return await StreamEvent.objects.filter(session_id=session_id).acount()


def _answered_ids(events: list[StreamEvent]) -> set[tuple[str, str | int]]:
    answered: set[tuple[str, str | int]] = set()
    for event in events:
        try:
            message = json.loads(event.payload) if event.payload else None
        except ValueError:
            continue
        if isinstance(message, dict) and ("result" in message or "error" in message) and "id" in message:
            answered.add((type(message["id"]).__name__, message["id"]))
    return answered


def _end_lapsed(session_id: str, stream_id: str) -> None:
    with transaction.atomic():
        events = list(StreamEvent.objects.filter(session_id=session_id, stream_id=stream_id).order_by("seq"))
        if not events or events[0].seq != 0 or any(event.is_final for event in events):
            return
        try:
            request_ids = json.loads(events[0].payload or "[]")
        except ValueError:
            request_ids = []
        answered = _answered_ids(events)
        pending = [r for r in request_ids if (type(r).__name__, r) not in answered]
        error = error_to_wire(RUN_LOST)[1]
        payloads = [jsonrpc.encode_error(request_id, error).decode() for request_id in pending] or [""]
        seq = events[-1].seq
        StreamEvent.objects.bulk_create(
            StreamEvent(
                session_id=session_id,
                stream_id=stream_id,
                seq=seq + offset,
                payload=payload,
                is_final=offset == len(payloads),
            )
            for offset, payload in enumerate(payloads, start=1)
        )


async def post_stream_end_if_lapsed(*, session_id: str, stream_id: str) -> bool:
    """End a POST stream whose running process stopped renewing its lease: every request it had not answered
    gets ``RUN_LOST``, stored as the stream's last events, exactly once whoever else tries at the same time.

    True when the stream's run is gone (the caller then replays the stored events, its end included); False
    while the lease is fresh, or while another caller that just took it is still storing the end (the caller
    reads it at its next keep-alive). A stream that already ended is left as it is."""
    now = timezone.now()
    opening = StreamEvent.objects.filter(session_id=session_id, stream_id=stream_id, seq=0)
    # Compare-and-set: one resumer takes the lapsed lease; a process that was only slow then learns at its next
    # renewal that it lost the stream, and stops.
    stale_before = lease_stale_before(now)
    taken = await opening.filter(run_seen_at__lt=stale_before).aupdate(run_seen_at=None)
    if not taken:
        # No lease to take: fresh, or already taken (then the taker ends the stream), or a stream opened before
        # leases existed, which counts as gone once it has been quiet for as long as a lease lasts.
        if await opening.filter(run_seen_at__isnull=False).aexists():
            return False
        stream = StreamEvent.objects.filter(session_id=session_id, stream_id=stream_id)
        if await stream.filter(is_final=True).aexists():
            return True
        if await stream.filter(created_at__gte=stale_before).aexists():
            return False
    # IntegrityError: another resumer (or the slow run) stored those seqs first; the caller reads what was stored.
    with contextlib.suppress(IntegrityError):
        await sync_to_async(_end_lapsed)(session_id, stream_id)
    return True


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
    """Delete sessions that ended or idled out, with their stored events (nothing can resume a stream of a
    session that is gone: its requests are answered 404)."""
    ended = LegacySession.objects.filter(state=SessionState.CLOSED.value) | LegacySession.objects.filter(
        last_seen_at__lt=timezone.now() - idle_for
    )
    deleted, _ = ended.delete()
    return deleted
