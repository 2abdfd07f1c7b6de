"""The base of the gateway's HTTP consumers: no channel of their own, so one plain receive loop, and database
connections recycled at most once a second per process rather than before every ASGI message.

Channels' ``AsyncConsumer.dispatch`` runs ``close_old_connections`` in a worker thread before each message (two
thread hops per request: with the tenant cache, most of a request's database cost), and its receive loop wraps
every receive in a task to multiplex a channel these consumers do not have.
"""

from __future__ import annotations

import time
from typing import Any

from channels.consumer import AsyncConsumer, get_handler_name
from channels.db import aclose_old_connections
from channels.exceptions import StopConsumer

RECYCLE_INTERVAL = 1.0

_last_recycled = 0.0


async def recycle_connections() -> None:
    """Close connections past ``CONN_MAX_AGE`` (and re-arm health checks) when the last pass is old enough."""
    global _last_recycled
    now = time.monotonic()
    if now - _last_recycled >= RECYCLE_INTERVAL:
        _last_recycled = now
        await aclose_old_connections()


class GatewayConsumer(AsyncConsumer):
    """``response_started`` tells an error path whether the HTTP response can still carry the error: once the
    headers are out (a 202, an SSE stream), a failure can only be logged or reported on a stream."""

    # Group messages arrive through the process mailbox (see mailbox.py), never on a consumer channel.
    channel_layer_alias = None
    response_started = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Dispatch the client's messages in order until a handler raises ``StopConsumer``."""
        self.scope = scope
        self.channel_layer = None
        self.response_started = False
        self._server_send = send
        try:
            while True:
                await self.dispatch(await receive())
        except StopConsumer:
            pass

    # A method, not a closure kept on the instance: a closure over ``self`` stored on ``self`` is a reference
    # cycle, and every request's consumer (with all it holds) would wait for the garbage collector to be freed.
    async def base_send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.response_started = True
        await self._server_send(message)

    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await recycle_connections()
        await handler(message)
