"""The lease of a POST response stream: renewed by the process running its requests, taken once by a resumer when
it lapses, which then ends the stream with an error for every request still unanswered."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from mcp_core import jsonrpc
from mcp_platform.gateway import sessions
from mcp_platform.gateway.models import LegacySession, StreamEvent
from mcp_platform.gateway.sessions import post_stream_end_if_lapsed, post_stream_open, post_stream_renew

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
async def session(tenant: Any) -> LegacySession:
    from mcp_core.session import SessionState

    return await sessions.legacy_session_create(
        tenant_id=tenant.pk, principal="anonymous", transport="streamable", state=SessionState.READY
    )


async def stored(session: LegacySession, stream_id: str) -> list[StreamEvent]:
    return [e async for e in StreamEvent.objects.filter(session=session, stream_id=stream_id).order_by("seq")]


async def lapse(session: LegacySession, stream_id: str) -> None:
    long_ago = timezone.now() - timedelta(minutes=5)
    await StreamEvent.objects.filter(session=session, stream_id=stream_id, seq=0).aupdate(run_seen_at=long_ago)


async def test_a_fresh_lease_is_left_alone(session: LegacySession) -> None:
    await post_stream_open(session_id=session.pk, stream_id="s1", request_ids=[1])
    assert not await post_stream_end_if_lapsed(session_id=session.pk, stream_id="s1")
    assert len(await stored(session, "s1")) == 1
    assert await post_stream_renew(session_id=session.pk, stream_id="s1")


async def test_a_lapsed_stream_ends_once_with_an_error_for_each_unanswered_request(session: LegacySession) -> None:
    await post_stream_open(session_id=session.pk, stream_id="s2", request_ids=[1, "two", 3])
    answered = jsonrpc.encode_result("two", {"content": []}).decode()
    await sessions.stream_event_append(session_id=session.pk, stream_id="s2", seq=1, payload=answered, is_final=False)
    await lapse(session, "s2")

    ended = await asyncio.gather(*(post_stream_end_if_lapsed(session_id=session.pk, stream_id="s2") for _ in range(4)))

    # One resumer takes the lease; the others find it taken and follow the stream to the end it stores.
    assert ended.count(True) >= 1
    events = await stored(session, "s2")
    errors = [json.loads(e.payload) for e in events[2:]]
    assert [e["id"] for e in errors] == [1, 3], "one error per unanswered request, none twice"
    assert {e["error"]["code"] for e in errors} == {-32603}
    assert all(e["error"]["data"] == {"reason": "server_stopped"} for e in errors)
    assert [e.is_final for e in events] == [False, False, False, True]
    # The process that held the lease learns it lost the stream at its next renewal.
    assert not await post_stream_renew(session_id=session.pk, stream_id="s2")
    assert await post_stream_end_if_lapsed(session_id=session.pk, stream_id="s2")
    assert len(await stored(session, "s2")) == 4


async def test_a_finished_stream_is_not_touched(session: LegacySession) -> None:
    await post_stream_open(session_id=session.pk, stream_id="s3", request_ids=[1])
    done = jsonrpc.encode_result(1, {"content": []}).decode()
    await sessions.stream_event_append(session_id=session.pk, stream_id="s3", seq=1, payload=done, is_final=True)
    await lapse(session, "s3")
    assert await post_stream_end_if_lapsed(session_id=session.pk, stream_id="s3")
    assert [e.payload for e in await stored(session, "s3")][1:] == [done]
