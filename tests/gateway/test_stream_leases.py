"""The lease of a POST response stream: renewed by the process running its requests, taken once by a resumer when
it lapses, which then ends the stream with an error for every request still unanswered."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from mcp_core import jsonrpc, sse
from mcp_core.context import ToolContext
from mcp_platform.gateway import sessions
from mcp_platform.gateway.models import LegacySession, StreamEvent
from mcp_platform.gateway.sessions import post_stream_end_if_lapsed, post_stream_open, post_stream_renew
from tenants.backends.registry import python_tool
from tests.gateway.conftest import INIT_PARAMS, OpenStream, request, rpc

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

ACME = "/t/acme/mcp"


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


@python_tool("tests.gateway.progress_then_wait")
async def progress_then_wait(ctx: ToolContext) -> str:
    await ctx.report_progress(1, 2, "started")
    await asyncio.Event().wait()
    return "never"


async def test_a_stream_whose_last_request_was_cancelled_ends_when_resumed(tenant: Any) -> None:
    """Cancelled requests go unanswered, but the stream still stores its end: a resumer stops there at once
    rather than waiting for the lease to lapse and reporting a lost run."""
    from tenants.backends.python_grants import python_function_grant
    from tenants.services import tool_create

    await sync_to_async(python_function_grant)(tenant=tenant, function="tests.gateway.progress_then_wait")
    await sync_to_async(tool_create)(
        tenant=tenant,
        name="progress_then_wait",
        input_schema={"type": "object", "properties": {}},
        backend="python",
        config={"function": "tests.gateway.progress_then_wait"},
    )
    init = await request("POST", ACME, body=rpc("initialize", INIT_PARAMS))
    session = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    params = {"name": "progress_then_wait", "arguments": {}, "_meta": {"progressToken": "p"}}
    call = OpenStream(ACME, rpc("tools/call", params, id=9), session)
    assert (await call.open())[0] == 200
    assert (await call.next_message())["method"] == "notifications/progress"
    await call.close()
    progress = await StreamEvent.objects.aget(session_id=session["mcp-session-id"], seq=1)

    cancelled = await request(
        "POST", ACME, body=rpc("notifications/cancelled", {"requestId": 9}, id=None), headers=session
    )
    assert cancelled.status == 202
    resumed = await request(
        "GET",
        ACME,
        headers={"accept": "text/event-stream", "last-event-id": sse.make_event_id(progress.stream_id, 1), **session},
        timeout=5,
    )
    assert resumed.status == 200
    assert resumed.messages() == [], "a cancelled request gets no answer, not even an error"
