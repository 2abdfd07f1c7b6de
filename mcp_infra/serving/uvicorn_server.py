"""uvicorn's server, stopped by a drain: its first SIGTERM or SIGINT drains the process (``mcp_infra.serving.drain``)
while it goes on serving, and only then does uvicorn's own shutdown run (listener closed, idle connections closed,
the rest finished), with what is left of the drain's time as its grace. A second signal stops it at once, as uvicorn
would; either way the signal is raised again once uvicorn has finished, so the process exits as it did before."""

from __future__ import annotations

import asyncio
import math
import socket
from types import FrameType

import uvicorn

from mcp_infra.serving.drain import drain_then, process_drain


class DrainingServer(uvicorn.Server):
    _loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets=sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """uvicorn's signal handler (installed with ``signal.signal``, so it runs on the loop's thread)."""
        if self._loop is None or self.should_exit or not drain_then(self._stop_after_drain, self._loop):
            super().handle_exit(sig, frame)
            return
        # uvicorn raises the signals it captured again after its shutdown (the process's own handler exits then).
        self._captured_signals.append(sig)

    def _stop_after_drain(self) -> None:
        # The handlers have answered what they cut off; anything else still running then is cancelled by uvicorn.
        self.config.timeout_graceful_shutdown = max(1, math.ceil(process_drain.remaining()))
        self.should_exit = True
