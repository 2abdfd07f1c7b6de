"""The official SDK client against the platform's ASGI application in this process and event loop: an ``httpx2``
transport that streams each response as the application sends it (``httpx2.ASGITransport`` returns only once the
body has ended, so an SSE stream would never return), with the SDK's Streamable HTTP transport on top."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_platform.asgi import application

ORIGIN = "http://127.0.0.1:8000"
# How long a response may take to start, and a disconnected application to finish.
START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0

Message = dict[str, Any]
# Told of each response as it starts (its request and status): a test learns that a stream is open.
ResponseStarted = Callable[[httpx2.Request, int], None]


class _ResponseBody(httpx2.AsyncByteStream):
    """The body chunks the application sends, as it sends them; closing it tells the application the client left."""

    def __init__(self, sent: asyncio.Queue[Message], received: asyncio.Queue[Message], app: asyncio.Task[None]) -> None:
        self._sent = sent
        self._received = received
        self._app = app

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            message = await _next_sent(self._sent, self._app)
            if message is None:
                return
            chunk = message.get("body", b"")
            if chunk:
                yield chunk
            if not message.get("more_body", False):
                return

    async def aclose(self) -> None:
        self._received.put_nowait({"type": "http.disconnect"})
        done, _ = await asyncio.wait({self._app}, timeout=STOP_TIMEOUT)
        if not done:
            self._app.cancel()
            with contextlib.suppress(BaseException):
                await self._app


async def _next_sent(sent: asyncio.Queue[Message], app: asyncio.Task[None]) -> Message | None:
    """The application's next message, or None once it ended without one (its exception raised)."""
    getting = asyncio.ensure_future(sent.get())
    done, _ = await asyncio.wait({getting, app}, return_when=asyncio.FIRST_COMPLETED)
    if getting in done:
        return getting.result()
    getting.cancel()
    if not sent.empty():
        return sent.get_nowait()
    app.result()
    return None


class StreamingAsgiTransport(httpx2.AsyncBaseTransport):
    """Each request runs the ASGI application in a task of this loop; the response streams."""

    def __init__(self, on_response: ResponseStarted | None = None) -> None:
        self._on_response = on_response

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": request.url.scheme,
            "path": request.url.path,
            "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query,
            "headers": [(name.lower(), value) for name, value in request.headers.raw],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        received: asyncio.Queue[Message] = asyncio.Queue()
        sent: asyncio.Queue[Message] = asyncio.Queue()
        received.put_nowait({"type": "http.request", "body": body, "more_body": False})
        app = asyncio.create_task(application(scope, received.get, sent.put))
        async with asyncio.timeout(START_TIMEOUT):
            start = await _next_sent(sent, app)
        if start is None or start["type"] != "http.response.start":
            raise httpx2.RemoteProtocolError(f"the application did not start a response: {start!r}", request=request)
        if self._on_response is not None:
            self._on_response(request, start["status"])
        return httpx2.Response(
            start["status"], headers=start.get("headers", []), stream=_ResponseBody(sent, received, app)
        )


def in_process_client(
    path: str, *, headers: dict[str, str] | None = None, on_response: ResponseStarted | None = None, **options: Any
) -> Client:
    """The SDK ``Client`` for the endpoint at ``path`` (``/t/<tenant>/mcp``), its requests carrying ``headers``."""
    transport = StreamingAsgiTransport(on_response)
    http = httpx2.AsyncClient(transport=transport, headers=headers or {}, timeout=START_TIMEOUT)
    return Client(streamable_http_client(ORIGIN + path, http_client=http), cache=None, **options)
