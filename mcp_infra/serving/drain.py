"""A web process's drain: what its first SIGTERM (or SIGINT) starts, and how it ends in the ASGI server's stop.

From the moment the signal arrives the process is draining (``/readyz`` answers 503). On its event loop the handlers
that the serving layers registered at start-up run (the gateway's ends its streams and waits for its requests) for
at most ``DRAIN_SECONDS``; past that deadline the drain has ``expired`` (what still runs is cut off and answered as
stopped), and once the handlers are done the server is told to stop: it closes its listener and finishes what is
left of its connections by the same deadline. The listener stays open while the handlers run: a load balancer takes
a probe or two to notice, and what it still sends meanwhile is served. A second signal stops at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from mcp_infra.conf import platform_settings

logger = logging.getLogger(__name__)

# A handler gets the drain (its deadline, whether it has expired) and returns once its part is done.
DrainHandler = Callable[["Drain"], Awaitable[None]]
# After the deadline, handlers get this long to answer what they cut off before the server is stopped anyway.
CUT_OFF_SECONDS = 2.0


class Drain:
    """The drain of this process: begun once, by a signal; read by readiness and by the handlers."""

    def __init__(self) -> None:
        self.started_at: float | None = None
        self.deadline = float("inf")
        self._handlers: list[DrainHandler] = []

    @property
    def draining(self) -> bool:
        return self.started_at is not None

    @property
    def expired(self) -> bool:
        """Whether the deadline has passed: work cancelled now is cut off by the drain."""
        return time.monotonic() >= self.deadline

    def remaining(self) -> float:
        """Seconds until the deadline (0 once passed; infinite before the drain begins)."""
        return max(0.0, self.deadline - time.monotonic())

    def register(self, handler: DrainHandler) -> None:
        """Run ``handler`` on the event loop when the process drains (start-up wiring of a higher layer)."""
        if handler not in self._handlers:
            self._handlers.append(handler)

    def begin(self, seconds: float) -> bool:
        """Mark the drain begun, ending ``seconds`` from now; True the first time. Sets two numbers, nothing else,
        so a signal handler may call it."""
        if self.started_at is not None:
            return False
        self.started_at = time.monotonic()
        self.deadline = self.started_at + seconds
        return True

    async def run(self) -> None:
        """Run every handler concurrently; return once they are done, or ``CUT_OFF_SECONDS`` after the deadline
        whatever they do. Never raises."""
        handlers = [asyncio.ensure_future(handler(self)) for handler in self._handlers]
        if not handlers:
            return
        _, late = await asyncio.wait(handlers, timeout=self.remaining() + CUT_OFF_SECONDS)
        for handler in late:
            handler.cancel()
        for handler in handlers:
            if handler.done() and not handler.cancelled() and handler.exception() is not None:
                logger.error("a drain handler failed", exc_info=handler.exception())


# The process's one drain.
process_drain = Drain()


def drain_then(stop: Callable[[], Awaitable[None] | None], loop: asyncio.AbstractEventLoop) -> bool:
    """Called by a server's signal handler: begin draining this process and, once drained, ``stop`` (a plain call
    or a coroutine function) on ``loop``. False when the process was already draining (the caller stops at once)."""
    if not process_drain.begin(float(platform_settings.DRAIN_SECONDS)):
        return False

    async def drain_and_stop() -> None:
        logger.info("draining: ready no more, finishing requests in flight (at most %.0f s)", process_drain.remaining())
        started = time.monotonic()
        await process_drain.run()
        logger.info("drained in %.2f s; stopping", time.monotonic() - started)
        stopped = stop()
        if stopped is not None:
            await stopped

    def start() -> None:
        _tasks.add(asyncio.ensure_future(drain_and_stop()))

    loop.call_soon_threadsafe(start)
    return True


# Held so the drain's task is not garbage-collected while it runs.
_tasks: set[asyncio.Future[None]] = set()
