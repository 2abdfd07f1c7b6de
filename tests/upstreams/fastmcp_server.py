"""A FastMCP upstream for the federation tests, run as a process: ``python -m tests.upstreams.fastmcp_server --port N``.

FastMCP speaks 2026-07-28 but answers ``subscriptions/listen`` with -32601; it announces list changes to handshake-era
sessions, on their GET stream. Its notifications go to one session (the one whose request changed the tools), so
``POST /grow?name=X`` adds a tool and sends ``notifications/tools/list_changed`` to every session that initialized,
as a server that changes its tools for everyone would. ``GET /stats`` says how many GET streams are open, how many
sessions initialized and which JSON-RPC methods were posted (by name).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

import mcp_types
import uvicorn
from fastmcp import FastMCP
from fastmcp.server.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.upstreams import GRACEFUL_SHUTDOWN_SECONDS
from tests.upstreams.bodies import body_of, replaying

SESSIONS: list[Any] = []
METHODS: Counter[str] = Counter()
GET_STREAMS = [0]


class SessionsSeen(Middleware):
    """Remembers every session that initialized, so ``/grow`` can tell them all."""

    async def on_initialize(self, context: Any, call_next: Any) -> Any:
        result = await call_next(context)
        if context.fastmcp_context is not None:
            SESSIONS.append(context.fastmcp_context.session)
        return result


def build(name: str) -> FastMCP:
    server = FastMCP(name, instructions="FastMCP federation test upstream")
    server.add_middleware(SessionsSeen())

    @server.tool
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.custom_route("/grow", methods=["POST"])
    async def grow(request: Request) -> Response:
        grown = request.query_params["name"]

        def answer() -> str:
            return f"I am {grown}"

        server.tool(answer, name=grown, description=f"Grown tool {grown}")
        for session in list(SESSIONS):
            try:
                await session.send_notification(mcp_types.ToolListChangedNotification())
            except Exception:  # a session that has gone
                SESSIONS.remove(session)
        return JSONResponse({"added": grown})

    @server.custom_route("/stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        return JSONResponse({"get_streams": GET_STREAMS[0], "sessions": len(SESSIONS), "methods": dict(METHODS)})

    return server


def observed(app: Any) -> Any:
    """``app`` counting its open handshake-era GET streams and the JSON-RPC methods posted to it."""

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["method"] == "POST":
            body = await body_of(receive)
            try:
                method = json.loads(body).get("method")
            except (ValueError, AttributeError):
                method = None
            if isinstance(method, str):
                METHODS[method] += 1
            await app(scope, replaying(body, receive), send)
            return
        streaming = False

        async def counted(message: Any) -> None:
            nonlocal streaming
            if message["type"] == "http.response.start" and message["status"] == 200 and scope["method"] == "GET":
                streaming = True
                GET_STREAMS[0] += 1
            await send(message)

        try:
            await app(scope, receive, counted)
        finally:
            if streaming:
                GET_STREAMS[0] -= 1

    return asgi


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="fastmcp-upstream")
    options = parser.parse_args()
    app = build(options.name).http_app(path="/mcp")
    config = uvicorn.Config(
        observed(app),
        host="127.0.0.1",
        port=options.port,
        log_level="warning",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
