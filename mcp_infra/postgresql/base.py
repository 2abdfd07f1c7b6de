"""Django's PostgreSQL backend, plus a check before each use that a persistent connection is still alive.

A terminated backend (``pg_terminate_backend``, a server restart or failover, an idle-session timeout) tells its
client by sending a FATAL error and closing the socket; nothing notices until the next query fails. Django's own
health check (``CONN_HEALTH_CHECKS``) is a ``SELECT 1`` round trip, and only after ``close_old_connections``,
which the gateway runs at most once a second: a connection killed in between failed every later query on the
thread that owned it, and the gateway's middleware failed before any recycling ran. Here, whenever Django is
about to use a connection outside a transaction, one ``poll()`` of its socket (about a microsecond) tells
whether the server has said anything since the last result: an idle connection has nothing to read unless the
server is closing it. A lost connection is closed and the next one opened, on the thread that owns it, so a
terminated connection costs only the query that was in flight when it died.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabaseWrapper
from psycopg import pq


def lost(connection: object) -> bool:
    """Whether the psycopg connection is closed, broken, or has unsolicited input while idle (the server's goodbye).

    A connection inside a transaction is not probed: its own statements report the loss, and a transaction
    cannot move to a new connection anyway.
    """
    pgconn: pq.abc.PGconn = connection.pgconn  # type: ignore[attr-defined]
    if pgconn.status != pq.ConnStatus.OK:
        return True
    if pgconn.transaction_status != pq.TransactionStatus.IDLE:
        return False
    poller = select.poll()
    poller.register(pgconn.socket, select.POLLIN)
    return bool(poller.poll(0))


class DatabaseWrapper(PostgresDatabaseWrapper):
    def ensure_connection(self) -> None:
        """Open a connection if there is none, or replace one the server has ended (outside transactions)."""
        if self.connection is not None and not self.in_atomic_block and lost(self.connection):
            self.close()
        super().ensure_connection()
