"""How long a connection to PostgreSQL waits on a network that stopped answering.

A database cut off by the network (silent, not refusing) would hold a connection attempt for as long as TCP retries
its handshake and a statement for as long as TCP retransmits (a quarter of an hour on Linux's defaults). With these
libpq parameters an attempt fails within seconds and a statement within half a minute: a web process answers 503 and
a worker's run is handed over by its lease. Keepalives find an idle connection that died the same way.
"""

from __future__ import annotations

from typing import Any

NETWORK_TIMEOUTS: dict[str, int] = {
    "connect_timeout": 5,  # seconds, for the whole attempt (TCP, TLS, start-up)
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,  # milliseconds a sent byte may stay unacknowledged
}


def with_network_timeouts(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` (a database's ``OPTIONS``) with the timeouts it does not set itself (a database URL's query sets
    them: ``?connect_timeout=…``)."""
    return {**NETWORK_TIMEOUTS, **options}
