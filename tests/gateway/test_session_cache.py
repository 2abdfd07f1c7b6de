"""The per-process memo of handshake-era sessions and the control signals between processes that keep it honest."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from mcp_core.session import SessionState
from mcp_platform.gateway import sessions
from mcp_platform.gateway.control import request_key, session_control
from mcp_platform.gateway.models import LegacySession
from mcp_platform.gateway.session_cache import SessionCache

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cache(clock: Clock) -> Iterator[SessionCache]:
    memo = SessionCache(clock=clock)
    session_control.on_session_changed(memo.forget)
    yield memo
    session_control.off_session_changed(memo.forget)


async def new_session(tenant: Any, *, state: SessionState = SessionState.INITIALIZING) -> LegacySession:
    return await sessions.legacy_session_create(
        tenant_id=tenant.pk,
        principal="alice",
        transport="streamable",
        state=state,
        protocol_version="2025-11-25" if state != SessionState.NEW else "",
    )


async def lookup(cache: SessionCache, session: LegacySession, principal: str = "alice") -> LegacySession | None:
    return await cache.get(tenant_id=session.tenant_id, principal=principal, session_id=session.pk)


async def change_behind_the_cache(session: LegacySession, **values: Any) -> None:
    await LegacySession.objects.filter(pk=session.pk).aupdate(**values)


async def test_a_known_session_is_served_from_memory_until_its_ttl(cache: SessionCache, clock: Clock, tenant: Any):
    session = await new_session(tenant)
    first = await lookup(cache, session)
    await change_behind_the_cache(session, log_level="error")

    again = await lookup(cache, session)
    clock.now += 5.1
    reread = await lookup(cache, session)

    assert first is not None and again is first and first.log_level == ""
    assert reread is not None and reread is not first and reread.log_level == "error"


async def test_a_change_signal_from_another_process_drops_the_session(cache: SessionCache, tenant: Any) -> None:
    session = await new_session(tenant)
    first = await lookup(cache, session)
    await change_behind_the_cache(session, log_level="debug")

    session_control.receive(tenant.pk, {"kind": "sessions", "changed": [session.pk], "closed": []})
    reread = await lookup(cache, session)

    assert reread is not None and reread is not first and reread.log_level == "debug"


async def test_a_session_ended_elsewhere_is_gone_and_its_stream_here_hears_it(cache: SessionCache, tenant: Any):
    session = await new_session(tenant)
    assert await lookup(cache, session) is not None
    heard: list[str] = []
    await change_behind_the_cache(session, state=SessionState.CLOSED.value)

    with session_control.watching_close(tenant.pk, session.pk, lambda: heard.append("closed")):
        session_control.receive(tenant.pk, {"kind": "sessions", "changed": [session.pk], "closed": [session.pk]})

    assert heard == ["closed"]
    assert await lookup(cache, session) is None


async def test_closing_a_session_here_ends_it_at_once(cache: SessionCache, tenant: Any) -> None:
    session = await new_session(tenant)
    remembered = await lookup(cache, session)
    assert remembered is not None
    heard: list[str] = []

    with session_control.watching_close(tenant.pk, session.pk, lambda: heard.append("closed")):
        await sessions.legacy_session_close(session=remembered)

    assert heard == ["closed"]
    assert await lookup(cache, session) is None
    assert (await LegacySession.objects.aget(pk=session.pk)).state == SessionState.CLOSED.value


async def test_a_remembered_session_is_not_found_with_another_principal(cache: SessionCache, tenant: Any) -> None:
    session = await new_session(tenant)
    assert await lookup(cache, session) is not None

    assert await lookup(cache, session, principal="mallory") is None


async def test_a_session_waiting_for_its_initialize_is_read_every_time(cache: SessionCache, tenant: Any) -> None:
    session = await new_session(tenant, state=SessionState.NEW)
    first = await lookup(cache, session)
    second = await lookup(cache, session)

    assert first is not None and second is not None and second is not first


async def test_a_session_idle_past_the_timeout_is_not_served_from_memory(cache: SessionCache, tenant: Any) -> None:
    session = await new_session(tenant)
    remembered = await lookup(cache, session)
    assert remembered is not None
    remembered.last_seen_at -= timedelta(hours=2)
    await change_behind_the_cache(session, last_seen_at=remembered.last_seen_at)

    assert await lookup(cache, session) is None


async def started_request() -> asyncio.Task[None]:
    """A request that runs until it is cancelled, once it has started."""
    started = asyncio.Event()

    async def long_request() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(long_request())
    await started.wait()
    return task


async def test_a_cancellation_reaches_the_request_running_here() -> None:
    task = await started_request()
    key = request_key(7, "session-1", 3)
    with session_control.running(key, task):
        await session_control.cancel(key, "user asked")
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_cancellation_from_another_process_reaches_the_request_running_here() -> None:
    task = await started_request()
    with session_control.running(request_key(7, "session-1", "call-1"), task):
        # Request ids 1 and "1" are different requests: only the exact one is cancelled.
        session_control.receive(7, {"kind": "cancel", "session": "session-1", "request_type": "int", "request": 1})
        await asyncio.sleep(0)
        assert not task.cancelled()
        session_control.receive(
            7, {"kind": "cancel", "session": "session-1", "request_type": "str", "request": "call-1"}
        )
        with pytest.raises(asyncio.CancelledError):
            await task
