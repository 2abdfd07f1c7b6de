"""A PostgreSQL that stops answering (a network cut, not a refusal) fails a connection within the platform's
connect timeout instead of holding it for as long as TCP retries."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import psycopg
import pytest

from mcp_infra.postgresql.network import NETWORK_TIMEOUTS, with_network_timeouts


@pytest.fixture
def silent_server() -> Iterator[tuple[str, int]]:
    """A port whose kernel completes TCP handshakes (the listen backlog) but behind which nobody ever answers: the
    client's start-up message waits as it would for a server cut off after the handshake."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()


def test_a_silent_server_fails_the_connection_within_the_connect_timeout(silent_server: tuple[str, int]) -> None:
    host, port = silent_server
    options = with_network_timeouts({})
    started = time.monotonic()

    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(host=host, port=port, user="postgres", dbname="postgres", **options)

    elapsed = time.monotonic() - started
    assert NETWORK_TIMEOUTS["connect_timeout"] - 0.5 <= elapsed < NETWORK_TIMEOUTS["connect_timeout"] + 3


def test_a_database_url_sets_its_own_timeouts() -> None:
    assert with_network_timeouts({"connect_timeout": 2})["connect_timeout"] == 2
    assert with_network_timeouts({})["tcp_user_timeout"] == NETWORK_TIMEOUTS["tcp_user_timeout"]
