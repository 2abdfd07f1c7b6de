"""One channel-layer channel per process on which every cross-process signal for work running here arrives.

Requests and streams of this process subscribe groups here (cancellation, answers to server-to-client
requests, catalog changes, live events of a resumed stream); whichever process learns something sends to
the group. HTTP consumers have no channel of their own: a receive cancelled with its short-lived consumer
would strand a popped message in channels-redis's backup queue, and one long-lived receiver per process
also keeps Redis traffic off the per-request path. The local table only routes; the facts live in the
database or in the message itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], None]
# Channel-layer group memberships expire (channels-redis: after a day); re-join the live ones well before.
REFRESH_SECONDS = 300.0


class Mailbox:
    def __init__(self) -> None:
        self._layer = get_channel_layer()
        self._channel: str | None = None
        self._handlers: dict[str, set[Handler]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()

    async def _ensure_channel(self) -> str:
        if self._channel is None:
            self._channel = await self._layer.new_channel("mcp.mailbox.")
            self._tasks = [
                asyncio.create_task(self._receive_forever(self._channel)),
                asyncio.create_task(self._refresh_forever(self._channel)),
            ]
        return self._channel

    async def _receive(self, channel: str) -> dict[str, Any]:
        """One receive, in a task of its own that this loop's cancellation always ends. redis-py can turn the
        cancellation of a blocked read into a connection error that it retries, and channels-redis then keeps
        reading: a single cancel would leave it (and the loop's shutdown) waiting forever."""
        receive = asyncio.ensure_future(self._layer.receive(channel))
        try:
            return await asyncio.shield(receive)
        except asyncio.CancelledError:
            while not receive.done():
                receive.cancel()
                await asyncio.wait({receive}, timeout=0.1)
            raise

    async def _receive_forever(self, channel: str) -> None:
        while True:
            try:
                message = await self._receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("mailbox receive failed; retrying")
                await asyncio.sleep(0.5)
                continue
            for handler in list(self._handlers.get(message.get("group", ""), ())):
                try:
                    handler(message)
                except Exception:
                    logger.exception("mailbox handler for %s failed", message.get("group"))

    async def _refresh_forever(self, channel: str) -> None:
        while True:
            await asyncio.sleep(REFRESH_SECONDS)
            for group in list(self._handlers):
                with contextlib.suppress(Exception):
                    await self._layer.group_add(group, channel)

    async def subscribe(self, group: str, handler: Handler) -> None:
        """Call ``handler`` (synchronously, on this loop) with each message sent to ``group`` from now on."""
        async with self._lock:
            channel = await self._ensure_channel()
            handlers = self._handlers.setdefault(group, set())
            first = not handlers
            handlers.add(handler)
            if first:
                await self._layer.group_add(group, channel)

    async def unsubscribe(self, group: str, handler: Handler) -> None:
        async with self._lock:
            handlers = self._handlers.get(group)
            if handlers is None:
                return
            handlers.discard(handler)
            if not handlers:
                del self._handlers[group]
                if self._channel is not None:
                    await self._layer.group_discard(group, self._channel)


async def send_to_group(group: str, message: dict[str, Any]) -> None:
    """Deliver ``message`` to whoever subscribed ``group`` on any process (at most once)."""
    await get_channel_layer().group_send(group, {"type": "mailbox.message", "group": group, **message})


class Inbox:
    """A stream's queue of the messages of the groups it subscribed, drained by the stream's own task."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._groups: list[str] = []

    def _put(self, message: dict[str, Any]) -> None:
        self.queue.put_nowait(message)

    async def join(self, *groups: str) -> None:
        box = mailbox()
        for group in groups:
            await box.subscribe(group, self._put)
            self._groups.append(group)

    async def leave(self) -> None:
        box = mailbox()
        groups, self._groups = self._groups, []
        for group in groups:
            with contextlib.suppress(Exception):
                await asyncio.shield(box.unsubscribe(group, self._put))

    async def next(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None when ``timeout`` passes first (time for a keep-alive)."""
        # asyncio.timeout, not wait_for: wait_for wraps the get in a task of its own, for every wait of every stream.
        try:
            async with asyncio.timeout(timeout):
                return await self.queue.get()
        except TimeoutError:
            return None


_mailboxes: dict[asyncio.AbstractEventLoop, Mailbox] = {}


def mailbox() -> Mailbox:
    """This event loop's mailbox (daphne and uvicorn run one loop per process)."""
    loop = asyncio.get_running_loop()
    box = _mailboxes.get(loop)
    if box is None:
        box = _mailboxes[loop] = Mailbox()
    return box
