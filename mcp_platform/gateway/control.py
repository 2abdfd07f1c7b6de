"""Signals between web processes about handshake-era sessions: one channel-layer group per tenant, joined once.

Every process that serves a tenant's sessions joins ``control_group(tenant_id)`` through its mailbox the first
time it needs to, and keeps the membership (the mailbox rejoins it after a Redis restart). Two signals travel on
it: ``cancel`` (``notifications/cancelled`` for a request running on some process) and ``session`` (a session's
stored state changed: drop it from the per-process memo). Both are rare, so a broadcast costs less than the
per-request group a request would otherwise join and leave. Requests running here are found through a local
table; it only routes, the facts stay in the database and in the message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from mcp_infra.messaging.mailbox import mailbox, send_to_group

logger = logging.getLogger(__name__)

RequestKey = tuple[int, str, str, str | int]
# How long session signals wait to travel together (seconds).
SIGNAL_BATCH_SECONDS = 0.02


def control_group(tenant_id: int) -> str:
    return f"mcp.ctl.{tenant_id}"


def request_key(tenant_id: int, session_id: str, request_id: str | int) -> RequestKey:
    # The type is part of the key: request ids 1 and "1" are different requests.
    return (tenant_id, session_id, type(request_id).__name__, request_id)


@dataclass(frozen=True)
class _Handler:
    """The mailbox handler of one tenant's control group (equal by value, so it is subscribed once)."""

    control: SessionControl
    tenant_id: int

    def __call__(self, message: dict[str, Any]) -> None:
        self.control.receive(self.tenant_id, message)


class SessionControl:
    """Which requests run here, and who wants to hear that a session changed."""

    def __init__(self) -> None:
        self._running: dict[RequestKey, asyncio.Task[Any]] = {}
        self._joined: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[int]] = weakref.WeakKeyDictionary()
        self._session_listeners: list[Callable[[int, str], None]] = []
        self._close_watchers: dict[tuple[int, str], set[Callable[[], None]]] = {}
        # Session signals waiting to be sent, per loop and tenant: session id -> whether it ended.
        self._batches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, dict[str, bool]]] = (
            weakref.WeakKeyDictionary()
        )
        self._sending: set[asyncio.Task[None]] = set()

    def on_session_changed(self, listener: Callable[[int, str], None]) -> None:
        """Call ``listener(tenant_id, session_id)`` whenever any process says the session changed."""
        self._session_listeners.append(listener)

    def off_session_changed(self, listener: Callable[[int, str], None]) -> None:
        self._session_listeners.remove(listener)

    @contextlib.contextmanager
    def watching_close(self, tenant_id: int, session_id: str, on_closed: Callable[[], None]) -> Iterator[None]:
        """While the block runs, ``on_closed()`` is called when any process ends the session (its GET stream)."""
        key = (tenant_id, session_id)
        self._close_watchers.setdefault(key, set()).add(on_closed)
        try:
            yield
        finally:
            watchers = self._close_watchers.get(key)
            if watchers is not None:
                watchers.discard(on_closed)
                if not watchers:
                    del self._close_watchers[key]

    async def join(self, tenant_id: int) -> bool:
        """Hear the tenant's signals on this loop; True when the membership is new (signals sent before it are
        lost to this process, so callers drop what they remember of the tenant). Never raises for the layer."""
        joined = self._joined.setdefault(asyncio.get_running_loop(), set())
        if tenant_id in joined:
            return False
        joined.add(tenant_id)
        await mailbox().subscribe(control_group(tenant_id), _Handler(self, tenant_id))
        return True

    @contextlib.contextmanager
    def running(self, key: RequestKey, task: asyncio.Task[Any]) -> Iterator[None]:
        """While the block runs, a cancellation of ``key`` from any process cancels ``task``."""
        self._running[key] = task
        try:
            yield
        finally:
            if self._running.get(key) is task:
                del self._running[key]

    async def cancel(self, key: RequestKey, reason: Any = None) -> None:
        """Cancel the request wherever it runs: here at once, else on whichever process has it."""
        if self._cancel_here(key):
            return
        tenant_id, session_id, kind, request_id = key
        await send_to_group(
            control_group(tenant_id),
            {"kind": "cancel", "session": session_id, "request_type": kind, "request": request_id, "reason": reason},
        )

    async def session_changed(self, tenant_id: int, session_id: str, *, closed: bool = False) -> None:
        """Tell every process (this one at once) that the session's stored state changed, or that it ended.

        Other processes hear it within ``SIGNAL_BATCH_SECONDS``: the signals of that interval travel as one
        message per tenant, so a thousand session ends a second cost a few dozen channel-layer sends."""
        self._notify_session(tenant_id, session_id, closed)
        loop = asyncio.get_running_loop()
        batches = self._batches.setdefault(loop, {})
        batch = batches.get(tenant_id)
        if batch is None:
            batch = batches[tenant_id] = {}
            loop.call_later(SIGNAL_BATCH_SECONDS, self._flush, loop, tenant_id)
        batch[session_id] = batch.get(session_id, False) or closed

    def _flush(self, loop: asyncio.AbstractEventLoop, tenant_id: int) -> None:
        batch = self._batches.get(loop, {}).pop(tenant_id, None)
        if not batch:
            return
        message = {"kind": "sessions", "changed": sorted(batch), "closed": sorted(s for s, c in batch.items() if c)}
        task = loop.create_task(self._send(tenant_id, message))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    @staticmethod
    async def _send(tenant_id: int, message: dict[str, Any]) -> None:
        try:
            await send_to_group(control_group(tenant_id), message)
        except Exception as exc:
            # Bounded by SESSION_CACHE_TTL elsewhere, and GET streams check their session at each keep-alive.
            logger.warning("could not signal session changes of tenant %s (%s)", tenant_id, exc)

    def receive(self, tenant_id: int, message: dict[str, Any]) -> None:
        kind = message.get("kind")
        if kind == "sessions":
            changed, closed = message.get("changed"), message.get("closed")
            closed_ids = set(closed) if isinstance(closed, list) else set()
            for changed_id in changed if isinstance(changed, list) else ():
                if isinstance(changed_id, str):
                    self._notify_session(tenant_id, changed_id, changed_id in closed_ids)
            return
        session_id = message.get("session")
        if not isinstance(session_id, str):
            return
        if kind == "cancel":
            request_id = message.get("request")
            if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
                self._cancel_here((tenant_id, session_id, str(message.get("request_type")), request_id))

    def _cancel_here(self, key: RequestKey) -> bool:
        task = self._running.get(key)
        if task is None:
            return False
        task.cancel()
        return True

    def _notify_session(self, tenant_id: int, session_id: str, closed: bool) -> None:
        for listener in self._session_listeners:
            try:
                listener(tenant_id, session_id)
            except Exception:
                logger.exception("session change listener failed")
        if closed:
            for on_closed in list(self._close_watchers.get((tenant_id, session_id), ())):
                try:
                    on_closed()
                except Exception:
                    logger.exception("session close watcher failed")


session_control = SessionControl()
