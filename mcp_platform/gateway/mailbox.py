"""One channel-layer channel per process on which signals for work running here arrive.

A request running in this process (a tool waiting for the client's answer, a call that may be cancelled)
subscribes its group here; whichever process receives the client's message sends to that group. The
local table only routes: the facts live in the database or in the message itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], None]


class Mailbox:
    def __init__(self) -> None:
        self._layer = get_channel_layer()
        self._channel: str | None = None
        self._handlers: dict[str, Handler] = {}
        self._receiver: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def _ensure_channel(self) -> str:
        async with self._lock:
            if self._channel is None:
                self._channel = await self._layer.new_channel("mcp.mailbox.")
                self._receiver = asyncio.create_task(self._receive_forever(self._channel))
            return self._channel

    async def _receive_forever(self, channel: str) -> None:
        while True:
            try:
                message = await self._layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("mailbox receive failed; retrying")
                await asyncio.sleep(0.5)
                continue
            handler = self._handlers.get(message.get("group", ""))
            if handler is not None:
                try:
                    handler(message)
                except Exception:
                    logger.exception("mailbox handler for %s failed", message.get("group"))

    async def subscribe(self, group: str, handler: Handler) -> None:
        channel = await self._ensure_channel()
        self._handlers[group] = handler
        await self._layer.group_add(group, channel)

    async def unsubscribe(self, group: str) -> None:
        self._handlers.pop(group, None)
        if self._channel is not None:
            await self._layer.group_discard(group, self._channel)


async def send_to_group(group: str, message: dict[str, Any]) -> None:
    """Deliver ``message`` to whoever subscribed ``group`` on any process (at most once)."""
    await get_channel_layer().group_send(group, {"type": "mailbox.message", "group": group, **message})


_mailboxes: dict[asyncio.AbstractEventLoop, Mailbox] = {}


def mailbox() -> Mailbox:
    """This event loop's mailbox (daphne and uvicorn run one loop per process)."""
    loop = asyncio.get_running_loop()
    box = _mailboxes.get(loop)
    if box is None:
        box = _mailboxes[loop] = Mailbox()
    return box
