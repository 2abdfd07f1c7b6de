"""What the ASGI server in front of the platform must get right, checked on whichever one serves the live
platform (``MCP_E2E_SERVER``): streams start at once and stay alive, a client that leaves ends its stream's work,
and the gateway's guards (body limit, Host, Origin) answer before anything else runs."""

from __future__ import annotations

import time

import anyio
import httpx
import pytest

from tests.e2e.live import SSE_KEEPALIVE_SECONDS
from tests.e2e.raw_http import ACCEPT_BOTH, RawSession, raw_http_client, sse_events

pytestmark = pytest.mark.anyio

TEST_DEADLINE = 30.0
# How soon a stream's headers and first event must arrive: well before the first keep-alive would.
PROMPT_SECONDS = SSE_KEEPALIVE_SECONDS / 2
# The standalone stream's lease goes stale after two keep-alives and 5 s; a release seen sooner than that
# can only be the closed stream's own clean-up.
RELEASE_DEADLINE = SSE_KEEPALIVE_SECONDS * 2


async def test_a_get_stream_opens_with_its_headers_and_priming_event_at_once(conformance_url: str) -> None:
    async with raw_http_client() as http:
        session = RawSession(http, conformance_url)
        with anyio.fail_after(TEST_DEADLINE):
            await session.initialize()
        started = time.monotonic()
        with anyio.fail_after(PROMPT_SECONDS):
            async with session.stream_get() as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
                priming = await anext(sse_events(stream))
    assert priming.id and priming.data == ""
    assert time.monotonic() - started < PROMPT_SECONDS


async def test_an_idle_stream_carries_keep_alive_comments(conformance_url: str) -> None:
    async with raw_http_client() as http:
        session = RawSession(http, conformance_url)
        with anyio.fail_after(TEST_DEADLINE):
            await session.initialize()
            async with session.stream_get() as stream:
                comments = 0
                async for line in stream.aiter_lines():
                    comments += line.startswith(":")
                    if comments == 2:
                        break
    assert comments == 2


async def test_a_closed_stream_ends_its_work_on_the_server_at_once(conformance_url: str) -> None:
    """The stream's task is cancelled when the client goes: its lease is released, so a new GET is not a 409."""
    async with raw_http_client() as http:
        session = RawSession(http, conformance_url)
        with anyio.fail_after(TEST_DEADLINE):
            await session.initialize()
            async with session.stream_get() as stream:
                assert stream.status_code == 200
                events = sse_events(stream)  # kept: a collected generator would close the stream early
                await anext(events)
                async with session.stream_get() as second:
                    assert second.status_code == 409, "one standalone stream per session"

        with anyio.fail_after(RELEASE_DEADLINE):
            while True:
                async with session.stream_get() as again:
                    if again.status_code == 200:
                        break
                    assert again.status_code == 409
                await anyio.sleep(0.1)


async def test_a_body_over_the_limit_is_413_before_it_is_read(conformance_url: str) -> None:
    headers = {"Accept": ACCEPT_BOTH, "Content-Type": "application/json"}
    too_big = b" " * (4 * 1024 * 1024 + 1)
    async with raw_http_client() as http:
        declared = await http.post(conformance_url, content=too_big, headers=headers)

        async def chunks():  # no Content-Length: the gateway counts what arrives
            for _ in range(5):
                yield b" " * (1024 * 1024)

        streamed = await http.post(conformance_url, content=chunks(), headers=headers)
    assert declared.status_code == 413, declared.text
    assert streamed.status_code == 413, streamed.text


@pytest.mark.parametrize(
    ("header", "value"),
    [("Host", "evil.example"), ("Origin", "http://evil.example")],
)
async def test_a_foreign_host_or_origin_is_403(conformance_url: str, header: str, value: str) -> None:
    headers = {"Accept": ACCEPT_BOTH, "Content-Type": "application/json", header: value}
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with httpx.AsyncClient(timeout=10.0) as http:
        response = await http.post(conformance_url, json=body, headers=headers)
    assert response.status_code == 403, response.text
