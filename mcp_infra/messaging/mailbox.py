"""One channel-layer channel per process on which every cross-process signal for work running here arrives.

Requests and streams of this process subscribe groups here (cancellation, answers to server-to-client
requests, catalog changes, live events of a resumed stream); whichever process learns something sends to
the group. HTTP consumers have no channel of their own: a receive cancelled with its short-lived consumer
would strand a popped message in channels-redis's backup queue, and one long-lived receiver per process
also keeps Redis traffic off the per-request path. The local table only routes; the facts live in the
database or in the message itself.

Memberships live in Redis and vanish when it restarts without persistence. The mailbox sends a probe to a group
of its own every ``PROBE_SECONDS``; a probe that does not come back means the memberships are gone, and every
group the table holds is joined again. A failed join never fails the caller: it is retried by the same repair.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from typing import Any

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], None]
# Channel-layer group memberships expire (channels-redis: after a day); re-join the live ones well before.
REFRESH_SECONDS = 300.0
# How often the mailbox checks that its memberships still exist, and how long a probe may take to come back.
PROBE_SECONDS = 2.0
PROBE_TIMEOUT = 3.0


class Mailbox:
    def __init__(self) -> None:
        self._layer = get_channel_layer()
        self._channel: str | None = None
        self._handlers: dict[str, set[Handler]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()
        self._probe_group = ""
        self._probe_seen = asyncio.Event()
        # Set when a join failed or the memberships were found gone: the watchdog joins every group again.
        self._repair = asyncio.Event()
        self.rejoins = 0

    async def _ensure_channel(self) -> str:
        if self._channel is None:
            self._channel = await self._layer.new_channel("mcp.mailbox.")
            self._probe_group = f"mcp.mbx.{uuid.uuid4().hex}"
            self._handlers[self._probe_group] = {self._probed}
            await self._join(self._probe_group, self._channel)
            self._tasks = [
                asyncio.create_task(self._receive_forever(self._channel)),
                asyncio.create_task(self._refresh_forever(self._channel)),
                asyncio.create_task(self._watch_memberships(self._channel)),
            ]
        return self._channel

    async def _join(self, group: str, channel: str) -> None:
        """``group_add`` that never raises: a failure (Redis restarting) is repaired by the watchdog."""
        try:
            await self._layer.group_add(group, channel)
        except Exception as exc:
            logger.warning("mailbox could not join %s (%s); joining again when the channel layer is back", group, exc)
            self._repair.set()

    def _probed(self, message: dict[str, Any]) -> None:
        self._probe_seen.set()

    async def _probe(self) -> bool:
        """True when a message sent to the mailbox's own group comes back: its memberships exist."""
        self._probe_seen.clear()
        try:
            await send_to_group(self._probe_group, {})
            async with asyncio.timeout(PROBE_TIMEOUT):
                await self._probe_seen.wait()
        except asyncio.CancelledError:
            raise
        except Exception:
            return False
        return True

    async def _rejoin_all(self, channel: str) -> bool:
        """Join every group the table holds again; True when every join succeeded."""
        self._repair.clear()
        for group in list(self._handlers):
            await self._join(group, channel)
        return not self._repair.is_set()

    async def _watch_memberships(self, channel: str) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(PROBE_SECONDS):
                    await self._repair.wait()
            if not self._repair.is_set() and await self._probe():
                continue
            if await self._rejoin_all(channel):
                self.rejoins += 1
                logger.warning("mailbox memberships were lost (channel layer restarted?); joined every group again")
            else:
                await asyncio.sleep(PROBE_SECONDS)

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
            except Exception as exc:
                # Redis restarting or unreachable: expected, and repaired by the watchdog once it is back.
                logger.warning("mailbox receive failed (%r); retrying", exc)
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
                await self._join(group, channel)

    async def subscribe(self, group: str, handler: Handler) -> None:
        """Call ``handler`` (synchronously, on this loop) with each message sent to ``group`` from now on.

        The group is joined on the channel layer every time, not only for its first handler: a membership lost
        with a Redis restart is restored by the next stream that needs it. Never raises for the channel layer."""
        async with self._lock:
            channel = await self._ensure_channel()
            self._handlers.setdefault(group, set()).add(handler)
            await self._join(group, channel)

    async def unsubscribe(self, group: str, handler: Handler) -> None:
        async with self._lock:
            handlers = self._handlers.get(group)
            if handlers is None:
                return
            handlers.discard(handler)
            if not handlers:
                del self._handlers[group]
                if self._channel is not None:
                    with contextlib.suppress(Exception):
                        await self._layer.group_discard(group, self._channel)


async def send_to_group(group: str, message: dict[str, Any]) -> None:
    """Deliver ``message`` to whoever subscribed ``group`` on any process (at most once)."""
    await get_channel_layer().group_send(group, {"type": "mailbox.message", "group": group, **message})


class Inbox:
    """A stream's queue of the messages of the groups it subscribed, drained by the stream's own task."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._groups: list[str] = []

    def put(self, message: dict[str, Any]) -> None:
        """Queue a message that did not come through a group (a signal of this process)."""
        self.queue.put_nowait(message)

    async def join(self, *groups: str) -> None:
        box = mailbox()
        for group in groups:
            await box.subscribe(group, self.put)
            self._groups.append(group)

    async def leave(self) -> None:
        box = mailbox()
        groups, self._groups = self._groups, []
        for group in groups:
            with contextlib.suppress(Exception):
                await asyncio.shield(box.unsubscribe(group, self.put))

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
