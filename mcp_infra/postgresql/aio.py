"""Statements run on the event loop itself, over a few psycopg async connections per loop.

Django's async ORM runs every query on one thread: the statements of concurrent requests queue behind each other,
and each one, when PostgreSQL answers, waits for the event loop's thread to let go of the GIL (up to the 5 ms
switch interval under load). The hot statements of handshake-era sessions (one per session set-up, one per end)
run here instead: no thread, several in flight, prepared after their fifth use. Anything else stays on the ORM.

Connections are opened with the settings of Django's ``default`` database (its test database under tests),
autocommit, checked before each use as ``base.lost`` checks Django's own, and replaced when lost; a statement
whose connection was lost before it was answered is retried once on a new one, so only idempotent statements
belong here.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import weakref
from collections.abc import AsyncIterator, Sequence
from typing import Any

import psycopg
from django.db import connections

from mcp_infra.postgresql.base import lost

# Connections per event loop, opened as concurrency asks: two keep a statement in flight while the next one is sent
# (about 5,000 set-up statements a second at a commit's latency, several times what a process's CPU asks for).
POOL_SIZE = 2
# psycopg prepares a statement server-side after this many uses on a connection (Django disables that by default
# for the sake of transaction-mode poolers; a deployment behind one sets OPTIONS["prepare_threshold"] = None).
PREPARE_THRESHOLD = 5

Row = tuple[Any, ...]


@functools.cache
def available() -> bool:
    """Whether the ``default`` database is PostgreSQL (otherwise callers use the ORM)."""
    return bool(connections["default"].vendor == "postgresql")


def _connect_params() -> dict[str, Any]:
    wrapper = connections["default"]
    params = dict(wrapper.get_connection_params())
    params.pop("cursor_factory", None)
    options = wrapper.settings_dict.get("OPTIONS", {})
    params["prepare_threshold"] = options.get("prepare_threshold", PREPARE_THRESHOLD)
    params["autocommit"] = True
    return params


class LoopPool:
    """At most ``POOL_SIZE`` connections of one event loop, handed out one statement at a time."""

    def __init__(self) -> None:
        self._idle: list[psycopg.AsyncConnection[Row]] = []
        # One cursor per connection, reused: creating one copies the connection's adapters every time.
        self._cursors: weakref.WeakKeyDictionary[psycopg.AsyncConnection[Row], psycopg.AsyncCursor[Row]] = (
            weakref.WeakKeyDictionary()
        )
        self._open = 0
        self._freed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def cursor(self) -> AsyncIterator[psycopg.AsyncCursor[Row]]:
        conn = await self._take()
        cursor = self._cursors.get(conn)
        if cursor is None:
            cursor = self._cursors[conn] = conn.cursor()
        try:
            yield cursor
        except BaseException:
            await self._discard(conn)
            raise
        await self._give_back(conn)

    async def _take(self) -> psycopg.AsyncConnection[Row]:
        async with self._freed:
            while True:
                while self._idle:
                    conn = self._idle.pop()
                    if not lost(conn):
                        return conn
                    self._open -= 1
                    await conn.close()
                if self._open < POOL_SIZE:
                    self._open += 1
                    break
                await self._freed.wait()
        try:
            return await psycopg.AsyncConnection.connect(**_connect_params())
        except BaseException:
            async with self._freed:
                self._open -= 1
                self._freed.notify()
            raise

    async def _give_back(self, conn: psycopg.AsyncConnection[Row]) -> None:
        async with self._freed:
            self._idle.append(conn)
            self._freed.notify()

    async def _discard(self, conn: psycopg.AsyncConnection[Row]) -> None:
        with contextlib.suppress(Exception):
            await conn.close()
        async with self._freed:
            self._open -= 1
            self._freed.notify()

    def abandon(self) -> None:
        """Close the idle connections of a loop that is gone, without it (their sockets, synchronously)."""
        idle, self._idle = self._idle, []
        self._open -= len(idle)
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.pgconn.finish()


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopPool] = weakref.WeakKeyDictionary()


def pool() -> LoopPool:
    loop = asyncio.get_running_loop()
    found = _pools.get(loop)
    if found is None:
        # A process runs one loop for its life; short-lived loops (tests, management commands) leave their pools
        # behind, and their connections are closed here rather than whenever the loop is collected.
        for other in [other for other in _pools if other.is_closed()]:
            _pools.pop(other).abandon()
        found = _pools[loop] = LoopPool()
    return found


async def execute(sql: str, params: Sequence[Any] = ()) -> list[Row]:
    """Run one idempotent statement; its rows (empty when it returns none). Raises psycopg errors."""
    try:
        return await _execute_once(sql, params)
    except psycopg.OperationalError:
        # The connection died under the statement (a terminated backend, a restart): once more on a new one.
        return await _execute_once(sql, params)


async def _execute_once(sql: str, params: Sequence[Any]) -> list[Row]:
    async with pool().cursor() as cursor:
        await cursor.execute(sql, params)
        return await cursor.fetchall() if cursor.description is not None else []
