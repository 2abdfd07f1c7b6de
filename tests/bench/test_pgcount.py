"""The counting proxy forwards a real PostgreSQL conversation and counts each statement once, whichever protocol."""

from __future__ import annotations

import os
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from bench.pgcount import StatementCounter

pytestmark = [
    pytest.mark.production,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="needs DATABASE_URL=postgres://…"
    ),
]


@pytest.fixture
def counter() -> Iterator[StatementCounter]:
    parts = urlsplit(os.environ["DATABASE_URL"])
    counter = StatementCounter(parts.hostname or "127.0.0.1", parts.port or 5432)
    counter.start()
    try:
        yield counter
    finally:
        counter.stop()


def proxied_url(counter: StatementCounter) -> str:
    parts = urlsplit(os.environ["DATABASE_URL"])
    credentials = parts.username or "postgres"
    if parts.password:
        credentials += f":{parts.password}"
    # sslmode=prefer asks for TLS first: the proxy must refuse it itself so the conversation stays readable.
    # The maintenance database: DATABASE_URL's own need not exist (pytest-django works in test_<name>).
    netloc = f"{credentials}@127.0.0.1:{counter.port}"
    return parts._replace(netloc=netloc, path="/postgres", query="sslmode=prefer").geturl()


def test_simple_and_extended_protocol_statements_are_counted(counter: StatementCounter) -> None:
    import psycopg

    with psycopg.connect(proxied_url(counter), autocommit=True) as connection:
        before = counter.snapshot()
        simple = connection.execute("SELECT 1", prepare=False).fetchone()
        bound = connection.execute("SELECT %s::int + 1", [41]).fetchone()
        with connection.cursor() as cursor:
            cursor.executemany("SELECT %s::int", [(1,), (2,), (3,)])
        after = counter.snapshot()

    assert simple == (1,)
    assert bound == (42,)
    assert after.statements - before.statements == 5
    assert after.connections == before.connections == 1


def test_each_connection_is_counted(counter: StatementCounter) -> None:
    import psycopg

    for _ in range(2):
        with psycopg.connect(proxied_url(counter), autocommit=True) as connection:
            connection.execute("SELECT 1")

    assert counter.snapshot().connections == 2
    assert counter.snapshot().statements == 2
