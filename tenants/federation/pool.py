"""Upstream sessions pooled per process and event loop, keyed by upstream and its connection revision, with a
circuit breaker per upstream and its health written to the ``Upstream`` row when it changes (never per call).

No process-local truth: any process opens its own sessions; the row's health is what the admin sees.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from mcp_infra.conf import platform_settings
from tenants.federation.connection import UpstreamConnection, UpstreamFailure, UpstreamTarget
from tenants.models import Upstream

logger = logging.getLogger(__name__)

# (upstream id, mode, person or None, digest of the person's credential or "").
SlotKey = tuple[int, str, int | None, str]
# ``refresh(upstream_id)`` re-reads an upstream's catalog; set by tenants.federation.mirror (which imports this).
Refresher = Callable[[int], Awaitable[None]]


class UpstreamUnavailable(UpstreamFailure):
    """The circuit of the upstream is open: calls fail at once until the cool-down ends."""


@dataclass
class _Breaker:
    failures: int = 0
    open_until: float = 0.0
    last_error: str = ""


@dataclass
class _Refreshes:
    """One upstream's refreshes on list_changed: the one running (or waiting its turn), whether another is wanted,
    and the notifications heard within the flood window."""

    task: asyncio.Task[None] | None = None
    pending: bool = False
    last_started: float = float("-inf")
    heard: deque[float] = field(default_factory=deque)
    muted_until: float = 0.0


@dataclass
class _Slot:
    connection: UpstreamConnection | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class UpstreamPool:
    """Open connections by upstream id on each event loop; the breaker state is shared by the loops."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[SlotKey, _Slot]] = (
            weakref.WeakKeyDictionary()
        )
        self._breakers: dict[int, _Breaker] = {}
        self._refresher: Refresher | None = None
        self._refreshes: dict[int, _Refreshes] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._sweepers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[None]] = (
            weakref.WeakKeyDictionary()
        )
        # Refreshes started on list_changed (and on watch), for tests and the flood's account.
        self.refreshes = 0

    def set_refresher(self, refresher: Refresher) -> None:
        self._refresher = refresher

    def _slots(self) -> dict[SlotKey, _Slot]:
        return self._loops.setdefault(asyncio.get_running_loop(), {})

    async def connection(self, target: UpstreamTarget) -> UpstreamConnection:
        """An open connection to ``target``, opened now if there is none (or it is for an older revision).

        Raises ``UpstreamUnavailable`` while the circuit is open and ``UpstreamFailure`` when connecting fails.
        """
        assert target.upstream_id is not None
        self._check_circuit(target)
        slot = self._slots().setdefault(_key(target), _Slot())
        current = slot.connection
        if current is not None and current.alive and current.target.revision == target.revision:
            return current
        async with slot.lock:
            current = slot.connection
            if current is not None and current.alive and current.target.revision == target.revision:
                return current
            slot.connection = None
            if current is not None:
                self._spawn(current.close())
            if target.person is not None:
                self._close_superseded(_key(target))
            self._check_circuit(target)
            upstream_id = target.upstream_id
            connection = UpstreamConnection(
                target,
                on_list_changed=lambda kind: self.list_changed(upstream_id),
                listen=self.listening(upstream_id),
            )
            try:
                await connection.open()
            except UpstreamFailure as exc:
                await self.failed(target, str(exc))
                raise
            slot.connection = connection
            self._ensure_sweeping()
            await self.succeeded(target, connection=connection)
            return connection

    def _close_superseded(self, key: SlotKey) -> None:
        """Close a person's connections to the upstream under an older credential (refreshed, reconnected): at most
        one per person, upstream and mode stays open."""
        slots = self._slots()
        for other in [k for k in slots if k[:3] == key[:3] and k != key]:
            stale = slots.pop(other).connection
            if stale is not None:
                self._spawn(stale.close())

    async def discard(self, connection: UpstreamConnection) -> None:
        """Forget ``connection`` (it broke); the next call opens a new one."""
        assert connection.target.upstream_id is not None
        slot = self._slots().get(_key(connection.target))
        if slot is not None and slot.connection is connection:
            slot.connection = None
        await connection.close()

    async def close_all(self) -> None:
        """Close this loop's connections (tests, shutdown)."""
        slots = self._loops.pop(asyncio.get_running_loop(), {})
        for slot in slots.values():
            if slot.connection is not None:
                await slot.connection.close()
        sweeper = self._sweepers.pop(asyncio.get_running_loop(), None)
        if sweeper is not None:
            sweeper.cancel()
        for state in self._refreshes.values():
            if state.task is not None:
                state.task.cancel()
        self._refreshes.clear()
        self._breakers.clear()

    # ---- circuit breaker -------------------------------------------------------------------------------

    def _check_circuit(self, target: UpstreamTarget) -> None:
        assert target.upstream_id is not None
        breaker = self._breakers.get(target.upstream_id)
        if breaker is None or breaker.open_until <= self._clock():
            return
        wait = breaker.open_until - self._clock()
        raise UpstreamUnavailable(
            f"upstream {target.name!r} is unavailable after {breaker.failures} failed attempts "
            f"(last error: {breaker.last_error}); the next attempt is in {wait:.0f}s"
        )

    async def failed(self, target: UpstreamTarget, error: str) -> None:
        """Count a failure to reach the upstream; the circuit opens after ``UPSTREAM_CIRCUIT_FAILURES`` in a row."""
        assert target.upstream_id is not None
        breaker = self._breakers.setdefault(target.upstream_id, _Breaker())
        breaker.failures += 1
        breaker.last_error = error
        opened = breaker.failures >= platform_settings.UPSTREAM_CIRCUIT_FAILURES
        cooldown = platform_settings.UPSTREAM_CIRCUIT_COOLDOWN
        if opened:
            breaker.open_until = self._clock() + cooldown
        now = datetime.now(UTC)
        await _record(
            target,
            last_error=error,
            last_error_at=now,
            consecutive_failures=breaker.failures,
            circuit_open_until=now + timedelta(seconds=cooldown) if opened else None,
        )

    async def succeeded(self, target: UpstreamTarget, *, connection: UpstreamConnection | None = None) -> None:
        """The upstream answered: close the circuit. Written to the row when it was failing or just connected."""
        assert target.upstream_id is not None
        breaker = self._breakers.pop(target.upstream_id, None)
        if breaker is None and connection is None:
            return
        fields: dict[str, object] = {
            "last_ok_at": datetime.now(UTC),
            "consecutive_failures": 0,
            "circuit_open_until": None,
        }
        if connection is not None and not connection.target.for_tools:
            fields.update(transport=connection.transport, protocol_version=connection.protocol_version)
        await _record(target, **fields)

    # ---- refresh on list_changed -----------------------------------------------------------------------
    # However many notifications arrive, one refresh runs and one waits per upstream, at least
    # UPSTREAM_REFRESH_MIN_INTERVAL apart. An upstream that sends more than UPSTREAM_LIST_CHANGED_LIMIT within the
    # window is disconnected and not listened to for the cool-down (its calls still work, over a connection that
    # does not listen): a flood costs a bounded number of refreshes, never the process.

    def list_changed(self, upstream_id: int) -> None:
        """The upstream says a list changed: refresh its mirror (coalesced), or disconnect it when it floods."""
        state = self._refreshes.setdefault(upstream_id, _Refreshes())
        now = self._clock()
        if state.muted_until > now:
            return
        window = platform_settings.UPSTREAM_LIST_CHANGED_WINDOW
        state.heard.append(now)
        while state.heard and state.heard[0] <= now - window:
            state.heard.popleft()
        if len(state.heard) > platform_settings.UPSTREAM_LIST_CHANGED_LIMIT:
            self._mute(upstream_id, state, count=len(state.heard), window=window)
            return
        self.refresh_soon(upstream_id)

    def refresh_soon(self, upstream_id: int) -> None:
        """Refresh the upstream's mirror once more: now, or when the refresh under way and the minimum interval
        allow (a request made while one waits joins it)."""
        if self._refresher is None:
            return
        state = self._refreshes.setdefault(upstream_id, _Refreshes())
        if state.task is not None and not state.task.done():
            state.pending = True
            return
        state.pending = True
        state.task = asyncio.get_running_loop().create_task(self._refresh_while_pending(upstream_id, state))

    def listening(self, upstream_id: int) -> bool:
        """False while the upstream is muted for flooding: connections opened meanwhile do not listen."""
        state = self._refreshes.get(upstream_id)
        return state is None or state.muted_until <= self._clock()

    def muted_for(self, upstream_id: int) -> float:
        """Seconds left of the upstream's cool-down after a flood (0 when it is listened to)."""
        state = self._refreshes.get(upstream_id)
        return 0.0 if state is None else max(0.0, state.muted_until - self._clock())

    async def _refresh_while_pending(self, upstream_id: int, state: _Refreshes) -> None:
        assert self._refresher is not None
        while state.pending:
            wait = state.last_started + platform_settings.UPSTREAM_REFRESH_MIN_INTERVAL - self._clock()
            if wait > 0:
                await asyncio.sleep(wait)
            state.pending = False
            state.last_started = self._clock()
            self.refreshes += 1
            try:
                await self._refresher(upstream_id)
            except Exception:
                logger.exception("refreshing upstream %s after its list_changed failed", upstream_id)

    def _mute(self, upstream_id: int, state: _Refreshes, *, count: int, window: float) -> None:
        cooldown = platform_settings.UPSTREAM_LIST_CHANGED_COOLDOWN
        state.muted_until = self._clock() + cooldown
        state.heard.clear()
        error = (
            f"sent {count} list_changed notifications in {window:g} s; disconnected, and not listened to for "
            f"{cooldown:g} s"
        )
        logger.warning("upstream %s %s", upstream_id, error)
        for key, slot in self._slots().items():
            connection = slot.connection
            if key[0] == upstream_id and connection is not None:
                slot.connection = None
                self._spawn(connection.close())
        self._spawn(_record_id(upstream_id, last_error=error, last_error_at=datetime.now(UTC)))

    # ---- upstreams removed or changed elsewhere -----------------------------------------------------------

    def _ensure_sweeping(self) -> None:
        loop = asyncio.get_running_loop()
        sweeper = self._sweepers.get(loop)
        if sweeper is None or sweeper.done():
            self._sweepers[loop] = loop.create_task(self._sweep_forever(), name="upstream pool sweep")

    async def _sweep_forever(self) -> None:
        """While this loop holds connections, read every ``UPSTREAM_WATCH_CHECK`` seconds which of their upstreams
        still exist, enabled, at the same revision: whatever was deleted, disabled or changed in any process is
        closed here (listen streams, pooled connections, refreshes waiting)."""
        while True:
            await asyncio.sleep(platform_settings.UPSTREAM_WATCH_CHECK)
            slots = self._slots()
            ids = {key[0] for key in slots} | set(self._refreshes)
            if not ids:
                self._sweepers.pop(asyncio.get_running_loop(), None)
                return
            try:
                await self.sweep(ids)
            except Exception:
                logger.exception("could not check the upstreams of this process's connections")

    async def sweep(self, ids: set[int]) -> None:
        """Close this loop's connections and refreshes of the upstreams among ``ids`` that are gone or disabled,
        and the connections of an older revision."""
        current = {
            pk: revision
            async for pk, revision in Upstream.objects.filter(pk__in=ids, enabled=True).values_list("pk", "revision")
        }
        slots = self._slots()
        for key, slot in list(slots.items()):
            if key[0] not in ids:
                continue
            revision = current.get(key[0])
            if slot.connection is not None and slot.connection.target.revision != revision:
                connection, slot.connection = slot.connection, None
                await connection.close()
            if revision is None:
                slots.pop(key, None)
        for upstream_id in ids:
            if upstream_id not in current:
                state = self._refreshes.pop(upstream_id, None)
                if state is not None and state.task is not None:
                    state.task.cancel()

    def _spawn(self, work: Awaitable[None]) -> None:
        async def run() -> None:
            await work

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _key(target: UpstreamTarget) -> SlotKey:
    # An upstream's main connection and, beside it, the session its imperatively asking tools are called in; for an
    # upstream that acts as each person, one per person and credential (a refreshed token opens a new one).
    assert target.upstream_id is not None
    credential = hashlib.sha256(repr(target.headers).encode()).hexdigest()[:16] if target.headers else ""
    return target.upstream_id, target.mode, target.person, credential


async def _record(target: UpstreamTarget, **fields: object) -> None:
    if target.upstream_id is not None:
        await _record_id(target.upstream_id, **fields)


async def _record_id(upstream_id: int, **fields: object) -> None:
    # Health is not catalog: a plain update, no revision bump, no list_changed.
    try:
        await Upstream.objects.filter(pk=upstream_id).aupdate(**fields)
    except Exception:
        logger.exception("could not record the health of upstream %s", upstream_id)


upstream_pool = UpstreamPool()
