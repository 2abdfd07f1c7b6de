"""After a person connects an account through a call's link (``tenants.connections.signals.connection_completed``),
their open handshake-era sessions in the tenant hear ``notifications/elicitation/complete {elicitationId}``, so the
client that showed the link may retry at once (clients ignore ids they do not know). The 2026-07-28 era has no
such notice: its client retries with the answer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import async_to_sync

from mcp_platform.gateway import sessions
from mcp_platform.gateway.session_streams import session_notify

logger = logging.getLogger(__name__)

ELICITATION_COMPLETE = "notifications/elicitation/complete"
# The person's sessions told at most, the most recently used first: a person has a few clients, not hundreds.
MAX_SESSIONS = 20

# Announcements started from a coroutine, kept referenced until they finish (the loop holds tasks weakly).
_announcing: set[asyncio.Task[int]] = set()


async def elicitation_complete_announce(*, tenant_id: int, user_id: int, elicitation_id: str) -> int:
    """Send the completion of ``elicitation_id`` to the person's open sessions in the tenant whose client declared
    URL-mode elicitation (at most ``MAX_SESSIONS``), wherever their streams are open; how many were told."""
    session_ids = await sessions.legacy_sessions_taking_urls(tenant_id=tenant_id, user_id=user_id, limit=MAX_SESSIONS)
    params = {"elicitationId": elicitation_id}
    for session_id in session_ids:
        await session_notify(tenant_id=tenant_id, session_id=session_id, method=ELICITATION_COMPLETE, params=params)
    return len(session_ids)


async def _announce_quietly(tenant_id: int, user_id: int, elicitation_id: str) -> int:
    try:
        return await elicitation_complete_announce(tenant_id=tenant_id, user_id=user_id, elicitation_id=elicitation_id)
    except Exception:
        # A nudge: the person's client still retries on its own (or when they tell it to).
        logger.warning("could not announce the completion of elicitation %s", elicitation_id[:16], exc_info=True)
        return 0


def connection_completed_received(sender: object, **kwargs: Any) -> None:
    """The receiver of ``connection_completed`` (connected at start-up). From a sync view (the connect callback
    page) the announcement is made before it returns; from a coroutine (``send`` on an event loop's thread) it runs
    as a task of that loop; through ``asend`` Django runs this in a thread, as for a view. Never raises."""
    tenant_id, user_id, elicitation_id = kwargs.get("tenant_id"), kwargs.get("user_id"), kwargs.get("elicitation_id")
    if not (isinstance(tenant_id, int) and isinstance(user_id, int) and isinstance(elicitation_id, str)):
        logger.warning("connection_completed needs tenant_id, user_id (int) and elicitation_id (str): %r", kwargs)
        return
    if not elicitation_id:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        async_to_sync(_announce_quietly)(tenant_id, user_id, elicitation_id)
        return
    task = loop.create_task(_announce_quietly(tenant_id, user_id, elicitation_id))
    _announcing.add(task)
    task.add_done_callback(_announcing.discard)
