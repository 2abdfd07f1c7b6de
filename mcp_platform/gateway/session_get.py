"""The GET of a handshake-era Streamable HTTP session: its standalone stream, and the resumption of any of its
streams from ``Last-Event-ID`` (the stored events replayed, then followed live)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mcp_core import http as mcp_http
from mcp_core import jsonrpc, sse
from mcp_core.errors import TransportError
from mcp_core.versions import V2025_11_25, at_least
from mcp_infra.conf import platform_settings
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import Inbox
from mcp_platform.gateway import sessions
from mcp_platform.gateway.control import session_control
from mcp_platform.gateway.drain import ending_on_drain
from mcp_platform.gateway.models import LegacySession
from mcp_platform.gateway.responses import Send, header_list, send_chunk, start_sse
from mcp_platform.gateway.server_lists import ServerLists
from mcp_platform.gateway.session_streams import SessionStreamMixin
from tenants.events import catalog_group
from tenants.models import Server, Tenant


class SessionGetMixin(SessionStreamMixin):
    """For the Streamable HTTP consumer: ``_get`` serves a session's GET, standalone or resumed."""

    send: Send
    headers: dict[str, str]
    tenant: Tenant
    server: Server | None
    _sse_open: bool
    _inbox: Inbox
    _stream_id: str
    _seq: int
    # Following a POST stream (resumed), not holding the session's standalone stream.
    _following_post = False
    # When this resumed stream last told the stream's runner that it is followed (monotonic seconds).
    _marked_following = float("-inf")

    if TYPE_CHECKING:

        async def _session(self, *, required: bool = True) -> LegacySession | None: ...

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
            with ending_on_drain(self._inbox):
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

    async def server_draining(self, message: dict[str, Any]) -> None:
        """End the stream after its last event, for the client to resume it on another process with
        ``Last-Event-ID``; a standalone stream lets go of the session's GET first, so that resumption is not
        refused as a second stream."""
        if not self._following_post and not self._closed:
            await sessions.standalone_stream_release(session_id=self.session.id, stream_id=self._stream_id)
        await self._close_stream()

    async def _standalone(self, stream_id: str, after: int | None) -> None:
        if not await sessions.standalone_stream_claim(session=self.session, stream_id=stream_id):
            raise TransportError("Conflict: this session already has an open GET stream", http_status=409)
        try:
            await self._inbox.join(catalog_group(self.tenant.id), groups.session_group(self.tenant.id, self.session.id))
            self._lists = ServerLists.of(self.tenant, self.server)
            if self._lists is not None:
                await self._lists.start()
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
