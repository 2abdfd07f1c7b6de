"""Per-process memo of handshake-era sessions, so a request of a known session runs no query.

Never the truth: the ``LegacySession`` row is. An entry is trusted for ``SESSION_CACHE_TTL`` seconds, then the
row is read again. A process that changes what a session's requests depend on (its end, its log level, its
handshake) drops the entry here at once and tells every other process through the tenant's control group
(``control.session_changed``); the channel layer may lose that signal, so staleness is bounded by the TTL, as for
the tenant cache. Only initialized sessions are remembered: a 2024-11-05 session waiting for its ``initialize``
is read from the database until it has one. Entries are shared by the concurrent requests of a session on this
process, which is what makes a change made here visible to them at once.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from mcp_core.session import SessionState
from mcp_infra.conf import platform_settings
from mcp_platform.gateway import sessions
from mcp_platform.gateway.control import session_control
from mcp_platform.gateway.models import LegacySession

MAX_SESSIONS = 4096
Key = tuple[int, str]


@dataclass
class _Entry:
    session: LegacySession
    checked_at: float


class SessionCache:
    """Open sessions by (tenant, id), least recently used first out."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        # Bumped by every change signal: a row read while a signal arrived is used but not remembered.
        self._generation = 0

    async def get(self, *, tenant_id: int, principal: str, session_id: str) -> LegacySession | None:
        """The open, unexpired session with this id in this tenant, started by ``principal``; None otherwise.
        Refreshes the session's idle clock (in the database at most once a minute)."""
        if await session_control.join(tenant_id):
            # Signals sent before this process listened were not heard: forget what was read before.
            self.forget_tenant(tenant_id)
        key = (tenant_id, session_id)
        entry = self._entries.get(key)
        if entry is not None and self._clock() - entry.checked_at < platform_settings.SESSION_CACHE_TTL:
            session = entry.session
            if session.principal != principal:
                return None
            if await self._usable(session):
                self._entries.move_to_end(key)
                return session
            # Closed here, or idle for longer than the timeout by this process's last sight of it: the row decides.
            self._entries.pop(key, None)
        generation = self._generation
        checked_at = self._clock()
        row = await sessions.legacy_session_get(tenant_id=tenant_id, principal=principal, session_id=session_id)
        if row is None:
            self._entries.pop(key, None)
        elif row.state != SessionState.NEW.value and generation == self._generation:
            self._store(row, checked_at)
        return row

    async def remember(self, session: LegacySession) -> None:
        """A session this process just created (its row is what we hold)."""
        if await session_control.join(session.tenant_id):
            self.forget_tenant(session.tenant_id)
        self._store(session, self._clock())

    def _store(self, session: LegacySession, checked_at: float) -> None:
        key = (session.tenant_id, session.id)
        self._entries[key] = _Entry(session=session, checked_at=checked_at)
        self._entries.move_to_end(key)
        while len(self._entries) > MAX_SESSIONS:
            self._entries.popitem(last=False)

    def forget(self, tenant_id: int, session_id: str) -> None:
        self._generation += 1
        self._entries.pop((tenant_id, session_id), None)

    def forget_tenant(self, tenant_id: int) -> None:
        self._generation += 1
        for key in [key for key in self._entries if key[0] == tenant_id]:
            del self._entries[key]

    def clear(self) -> None:
        self._generation += 1
        self._entries.clear()

    @staticmethod
    async def _usable(session: LegacySession) -> bool:
        """False when the session is closed or looks idled out; otherwise refreshes its idle clock when due."""
        if session.state == SessionState.CLOSED.value:
            return False
        now = timezone.now()
        idle = now - session.last_seen_at
        if idle > timedelta(seconds=platform_settings.SESSION_IDLE_TIMEOUT):
            return False
        if idle > sessions.TOUCH_INTERVAL:
            session.last_seen_at = now
            await sessions.legacy_session_touch(session_id=session.id, now=now)
        return True


session_cache = SessionCache()
session_control.on_session_changed(session_cache.forget)
