"""How the gateway's streams and requests end when this process drains (``mcp_infra.serving.drain``, on SIGTERM).

At once: a handshake-era POST stream of a client that knows SSE polling (2025-11-25 and later) is closed after its
last event id with a ``retry:`` hint while its requests run on here, their events stored and relayed, so the client
resumes on another process with ``Last-Event-ID``; a session's GET stream (standalone or resumed) ends after its last
event, its claim released first, for the client to resume elsewhere the same way; a ``subscriptions/listen`` stream
ends (its client listens again). Then this process's requests run to their end, until the deadline; those still
running then are cut off and answered with ``server_stopped``, stored, so a resumer elsewhere reads the answer at
once instead of after the stream's lease lapses. Last, the 2024-11-05 ``/sse`` streams end: they carry this
process's answers until then, and their transport cannot resume (the client reconnects: a new session).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from mcp_infra.messaging.mailbox import Inbox
from mcp_infra.serving.drain import CUT_OFF_SECONDS, Drain, process_drain
from mcp_platform.gateway.streams import release_post_streams, runs_in_flight

logger = logging.getLogger(__name__)

# The message a stream's inbox gets when the stream should end for the drain (handled like any other message, so
# a stream always ends between two of its events).
SERVER_DRAINING: dict[str, Any] = {"type": "server.draining"}
# How often the drain looks for requests that arrived since it began (their POST streams are released too).
RECHECK_SECONDS = 0.25
# After requests were cut off: how long their answers may take to reach a 2024-11-05 stream of this process through
# the channel layer before that stream ends.
ANSWERS_SETTLE_SECONDS = 0.5

# Streams of this process that end when it drains: at once, or last (after this process's requests).
_ending_now: set[Inbox] = set()
_ending_last: set[Inbox] = set()
# Set once the last streams were told: a 2024-11-05 stream opened after that ends at once too.
_last_told = False


@contextlib.contextmanager
def ending_on_drain(inbox: Inbox, *, last: bool = False) -> Iterator[None]:
    """While inside, the stream reading ``inbox`` gets ``SERVER_DRAINING`` when the process drains (at once if it
    already does): at the drain's start, or with ``last`` once this process's requests are done."""
    streams = _ending_last if last else _ending_now
    streams.add(inbox)
    if process_drain.draining and (_last_told or not last):
        inbox.put(SERVER_DRAINING)
    try:
        yield
    finally:
        streams.discard(inbox)


async def gateway_drain(drain: Drain) -> None:
    """The gateway's part of the drain (see the module docstring). Registered at start-up by ``background``."""
    global _last_told
    for inbox in list(_ending_now):
        inbox.put(SERVER_DRAINING)
    while (running := runs_in_flight()) and not drain.expired:
        await release_post_streams()
        await asyncio.wait(running, timeout=min(drain.remaining(), RECHECK_SECONDS))
    cut = runs_in_flight()
    if cut:
        logger.warning("%d requests were still running at the drain's deadline: answered as stopped", len(cut))
        for run in cut:
            run.cancel()
        await asyncio.wait(cut, timeout=CUT_OFF_SECONDS)
        if _ending_last:
            await asyncio.sleep(ANSWERS_SETTLE_SECONDS)
    _last_told = True
    for inbox in list(_ending_last):
        inbox.put(SERVER_DRAINING)
