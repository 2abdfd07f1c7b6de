"""What the activity log is told about people's credentials: one ``ConnectionEvent`` per connect, failed refresh,
use (at most one per credential in ``USE_RESOLUTION``), revoke, key stored or removed. No token or key in it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from tenants.connections.signals import connection_event

logger = logging.getLogger(__name__)

CONNECTED = "connected"
REFRESHED = "refreshed"
REFRESH_FAILED = "refresh_failed"
USED = "used"
REVOKED = "revoked"
KEY_STORED = "key_stored"
KEY_REMOVED = "key_removed"
# "Used" is recorded at most this often per credential: a busy person's calls are in the log already.
USE_RESOLUTION = timedelta(minutes=15)


@dataclass(frozen=True, slots=True)
class ConnectionEvent:
    tenant_id: int
    user_id: int
    target: str
    action: str
    # Who did it where it was not the person (an admin disconnecting a member); None: the person.
    by_user_id: int | None = None
    # The upstream's error code and description for a failure; never a token.
    error: str = ""


def announce(event: ConnectionEvent) -> None:
    """Tell the receivers (the activity log); a receiver that fails costs its record, never the caller's work."""
    for _receiver, outcome in connection_event.send_robust(sender=ConnectionEvent, event=event):
        if isinstance(outcome, Exception):
            logger.error("a receiver of connection events failed: %s", type(outcome).__name__)
