"""The load generator's HTTP client parses what real servers send, however the bytes are split on the wire."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from bench.http_client import HttpConnection, ProtocolError, build_request

pytestmark = pytest.mark.anyio

DEADLINE = 10.0
CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"


@asynccontextmanager
async def canned_server(replies: list[list[bytes]], *, hang_up: bool = True) -> AsyncIterator[int]:
    """A real TCP server answering each request with the next reply, written piece by piece; then it hangs up,
    or (``hang_up=False``) waits for the client to.
    """
    queue = list(replies)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while queue:
                await reader.readuntil(b"\r\n\r\n")
                for piece in queue.pop(0):
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0)
            if not hang_up:
                await reader.read()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client left before every reply was asked for
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


@pytest.fixture
async def two_replies() -> AsyncIterator[int]:
    replies = [
        [b"HTTP/1.1 200 OK\r\nContent-Le", b"ngth: 5\r\nX-A: b\r\n\r\nhel", b"lo"],
        [CHUNKED, b"7\r\ndata: ", b"a\r\n8\r\n\n\nnext\n\n\r\n", b"0\r\n\r\n"],
    ]
    async with canned_server(replies, hang_up=False) as port:
        yield port


async def test_content_length_and_chunked_bodies_on_one_keep_alive_connection(two_replies: int) -> None:
    chunks: list[bytes] = []
    with anyio.fail_after(DEADLINE):
        connection = await HttpConnection.open("127.0.0.1", two_replies)
        first = await connection.request(build_request("GET", "h", "/", []))
        second = await connection.request(build_request("POST", "h", "/", [], b"{}"), chunks.append)
        connection.close()

    assert (first.status, first.headers["x-a"], first.body) == (200, "b", b"hello")
    assert second.body == b"data: a\n\nnext\n\n"
    assert chunks == [b"data: a", b"\n\nnext\n\n"]


async def test_the_head_is_available_before_the_body_ends() -> None:
    async with canned_server([[CHUNKED, b"5\r\nfirst\r\n"]], hang_up=False) as port:
        with anyio.fail_after(DEADLINE):
            connection = await HttpConnection.open("127.0.0.1", port)
            body = connection.request(build_request("GET", "h", "/stream", []))
            head = await connection.head()
            assert head.status == 200
            assert not body.done()
            connection.close()
        with pytest.raises(ProtocolError):
            await body


async def test_a_connection_closed_mid_body_fails_the_request() -> None:
    async with canned_server([[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"]]) as port:
        with anyio.fail_after(DEADLINE):
            connection = await HttpConnection.open("127.0.0.1", port)
            with pytest.raises(ProtocolError, match="closed mid-response"):
                await connection.request(build_request("GET", "h", "/", []))


async def test_a_second_request_while_one_is_in_flight_is_refused(two_replies: int) -> None:
    with anyio.fail_after(DEADLINE):
        connection = await HttpConnection.open("127.0.0.1", two_replies)
        pending = connection.request(build_request("GET", "h", "/", []))
        with pytest.raises(ProtocolError, match="already in flight"):
            connection.request(build_request("GET", "h", "/", []))
        await pending
        connection.close()
