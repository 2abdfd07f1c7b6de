"""Streamable HTTP by hand: a dropped response stream resumes with ``Last-Event-ID``; session errors.

Raw httpx, because the SDK reconnects on its own and would hide what the server sent.
"""

from __future__ import annotations

import anyio
import pytest

from tests.e2e.raw_http import (
    RawSession,
    is_progress,
    post_until_first_progress,
    raw_http_client,
    request_message,
    resume_until_response,
)

pytestmark = pytest.mark.anyio

TEST_DEADLINE = 60.0


async def test_dropped_response_stream_resumes_after_the_last_event_id(conformance_url: str) -> None:
    async with raw_http_client() as http:
        session = RawSession(http, conformance_url)
        with anyio.fail_after(TEST_DEADLINE):
            await session.initialize()
            call_id = session.next_id()
            call = request_message(
                call_id,
                "tools/call",
                {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "resume-me"}},
            )
            before = await post_until_first_progress(session, call)
            priming = before[0]
            assert priming.id, "the first event of a 2025-11-25 stream is a priming event with an id"
            assert priming.data == ""
            last_seen = before[-1].id
            assert last_seen is not None, "every message event carries an id to resume from"
            after = await resume_until_response(session, last_seen, call_id)

    messages = [m for m in (e.message() for e in before + after) if m is not None]
    progress = [m["params"] for m in messages if is_progress(m)]
    assert [p["progress"] for p in progress] == [0, 50, 100], "each progress notification exactly once, in order"
    assert {p["progressToken"] for p in progress} == {"resume-me"}
    final = messages[-1]
    assert final["id"] == call_id
    assert final["result"].get("isError") is not True
    assert final["result"]["content"], final
    ids = [e.id for e in before + after if e.id is not None]
    assert len(ids) == len(set(ids)), f"an event was delivered twice: {ids}"
    responses = [m for m in messages if m.get("id") == call_id]
    assert len(responses) == 1


async def test_unknown_last_event_id_is_404(conformance_url: str) -> None:
    async with raw_http_client() as http:
        session = RawSession(http, conformance_url)
        with anyio.fail_after(TEST_DEADLINE):
            await session.initialize()
            async with session.stream_get(last_event_id="nosuchstream.3") as response:
                assert response.status_code == 404


async def test_event_id_of_another_session_is_404(conformance_url: str) -> None:
    async with raw_http_client() as http:
        owner = RawSession(http, conformance_url)
        stranger = RawSession(http, conformance_url)
        with anyio.fail_after(TEST_DEADLINE):
            await owner.initialize()
            await stranger.initialize()
            call = request_message(
                owner.next_id(),
                "tools/call",
                {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": 7}},
            )
            response = await owner.post(call)
            assert response.headers["content-type"].startswith("text/event-stream")
            owners_id = next(line for line in response.text.splitlines() if line.startswith("id:"))
            owners_id = owners_id.removeprefix("id:").strip()
            async with stranger.stream_get(last_event_id=owners_id) as replay:
                assert replay.status_code == 404


async def test_get_without_a_session_is_405(conformance_url: str) -> None:
    # Only handshake sessions have a GET stream; without one the endpoint is POST only (2026-07-28 §HTTP).
    async with raw_http_client() as http:
        with anyio.fail_after(TEST_DEADLINE):
            async with RawSession(http, conformance_url).stream_get() as response:
                assert response.status_code == 405


async def test_requests_after_delete_are_404(conformance_url: str) -> None:
    async with raw_http_client() as http:
        session = RawSession(http, conformance_url)
        with anyio.fail_after(TEST_DEADLINE):
            await session.initialize()
            listed = await session.call("tools/list")
            assert "result" in listed

            deleted = await http.delete(conformance_url, headers=session.headers())
            assert deleted.status_code in (200, 202, 204), deleted.text

            after_post = await session.post(request_message(session.next_id(), "tools/list"))
            assert after_post.status_code == 404
            async with session.stream_get() as after_get:
                assert after_get.status_code == 404
            again = await http.delete(conformance_url, headers=session.headers())
            assert again.status_code == 404
