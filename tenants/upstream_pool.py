"""Upstream sessions pooled per process and event loop, keyed by upstream and its connection revision, with a
circuit breaker per upstream and its health written to the ``Upstream`` row when it changes (never per call).

No process-local truth: any process opens its own sessions; the row's health is what the admin sees.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from mcp_platform.conf import platform_settings
from tenants.models import Upstream
from tenants.upstream_connection import UpstreamConnection, UpstreamFailure, UpstreamTarget

logger = logging.getLogger(__name__)

# ``refresh(upstream_id)`` re-reads an upstream's catalog; set by tenants.upstream_mirror (which imports this).
Refresher = Callable[[int], Awaitable[None]]


class UpstreamUnavailable(UpstreamFailure):
    """The circuit of the upstream is open: calls fail at once until the cool-down ends."""


@dataclass
class _Breaker:
    failures: int = 0
    open_until: float = 0.0
    last_error: str = ""


@dataclass
class _Slot:
    connection: UpstreamConnection | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class UpstreamPool:
    """Open connections by upstream id on each event loop; the breaker state is shared by the loops."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[int, str], _Slot]] = (
            weakref.WeakKeyDictionary()
        )
        self._breakers: dict[int, _Breaker] = {}
        self._refresher: Refresher | None = None
        self._refreshing: dict[int, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[None]] = set()

    def set_refresher(self, refresher: Refresher) -> None:
        self._refresher = refresher

    def _slots(self) -> dict[tuple[int, str], _Slot]:
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
            self._check_circuit(target)
            upstream_id = target.upstream_id
            connection = UpstreamConnection(target, on_list_changed=lambda kind: self.list_changed(upstream_id))
            try:
                await connection.open()
            except UpstreamFailure as exc:
                await self.failed(target, str(exc))
                raise
            slot.connection = connection
            await self.succeeded(target, connection=connection)
            return connection

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

    def list_changed(self, upstream_id: int) -> None:
        """The upstream says a list changed: refresh its mirror once (again after a refresh under way ends)."""
        if self._refresher is None:
            return
        running = self._refreshing.get(upstream_id)
        if running is not None and not running.done():
            running.add_done_callback(lambda _: self.list_changed(upstream_id))
            return
        task = asyncio.get_running_loop().create_task(self._refresh(upstream_id))
        self._refreshing[upstream_id] = task

    async def _refresh(self, upstream_id: int) -> None:
        assert self._refresher is not None
        try:
            await self._refresher(upstream_id)
        except Exception:
            logger.exception("refreshing upstream %s after its list_changed failed", upstream_id)

    def _spawn(self, work: Awaitable[None]) -> None:
        async def run() -> None:
            await work

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _key(target: UpstreamTarget) -> tuple[int, str]:
    # An upstream's main connection and, beside it, the session its imperatively asking tools are called in.
    assert target.upstream_id is not None
    return target.upstream_id, target.mode


async def _record(target: UpstreamTarget, **fields: object) -> None:
    # Health is not catalog: a plain update, no revision bump, no list_changed.
    if target.upstream_id is None:
        return
    try:
        await Upstream.objects.filter(pk=target.upstream_id).aupdate(**fields)
    except Exception:
        logger.exception("could not record the health of upstream %s", target.name)


upstream_pool = UpstreamPool()
