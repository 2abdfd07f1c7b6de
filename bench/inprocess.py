"""Drive the platform's ASGI application in this process, without a server or a network: for instruction counts
(``valgrind --tool=callgrind``), profiles, and counting the event-loop steps a request takes.

    DATABASE_URL=… REDIS_URL=… python -m bench.inprocess --era handshake --tool echo --calls 300 [--concurrency 16]
        [--server <slug>]

The database is one the harness prepared (``bench_mcp``: migrated, bench tenants loaded). Instructions per
request are the difference between two runs with different ``--calls``, which cancels start-up (run once first
so that no run compiles bytecode). ``--warmup`` calls run before the measured ones; ``--server`` sends them to one
of the bench tenant's named servers (``/t/bench/s/<slug>/mcp``), which must select the tool. It prints one JSON
line: requests, wall and CPU time, and the loop's callbacks per request (the handles the event loop ran).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from typing import Any

from bench.mcp_wire import HANDSHAKE, HANDSHAKE_VERSION, STATELESS, envelope
from bench.workloads import TOOL_ARGUMENTS

JSONObject = dict[str, Any]
PATH = "/t/bench/mcp"
HOST = "127.0.0.1:8000"


class Response:
    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = b""


async def call(app: Any, headers: list[tuple[str, str]], body: bytes, path: str = PATH) -> Response:
    """One POST to ``path`` through the whole ASGI stack, as a server would deliver it."""
    response = Response()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", HOST.encode())]
        + [(k.lower().encode(), v.encode()) for k, v in headers]
        + [(b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    delivered = False
    finished = asyncio.Event()

    async def receive() -> JSONObject:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: JSONObject) -> None:
        if message["type"] == "http.response.start":
            response.status = message["status"]
            response.headers = {k.decode().lower(): v.decode() for k, v in message.get("headers", [])}
        elif message["type"] == "http.response.body":
            response.body += message.get("body", b"")
            if not message.get("more_body", False):
                finished.set()

    await app(scope, receive, send)
    return response


def request_bytes(
    era: str, method: str, params: JSONObject, request_id: int, session: str | None
) -> tuple[list[tuple[str, str]], bytes]:
    headers, text = envelope(era, method, params, session_id=session)
    message = json.loads(text)
    message.update({"jsonrpc": "2.0", "id": request_id})
    return headers, json.dumps(message).encode()


async def open_session(app: Any, path: str = PATH) -> str:
    params = {
        "protocolVersion": HANDSHAKE_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "inprocess", "version": "1"},
    }
    headers, body = request_bytes(HANDSHAKE, "initialize", params, 0, None)
    response = await call(app, headers, body, path)
    session = response.headers["mcp-session-id"]
    headers, _ = envelope(HANDSHAKE, "notifications/initialized", None, session_id=session)
    await call(app, headers, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', path)
    return session


async def run(args: argparse.Namespace) -> JSONObject:
    from mcp_infra.serving.servers import freeze_start_up_heap
    from mcp_platform.asgi import application

    path = f"/t/bench/s/{args.server}/mcp" if args.server else PATH
    session = await open_session(application, path) if args.era == HANDSHAKE else None
    params = {"name": args.tool, "arguments": TOOL_ARGUMENTS[args.tool]}
    counter = iter(range(1, 10**9))
    remaining = args.warmup

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            headers, body = request_bytes(args.era, "tools/call", params, next(counter), session)
            response = await call(application, headers, body, path)
            if response.status != 200 or b'"error"' in response.body:
                raise SystemExit(f"unexpected answer {response.status}: {response.body[:300]!r}")

    await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    # As ``manage.py serve`` does after start-up: the collector leaves the heap built so far alone. Without it every
    # full collection walks the whole import-time heap, and what a change costs depends on how many of those it
    # happens to trigger.
    freeze_start_up_heap()
    remaining = args.calls
    loop = asyncio.get_running_loop()
    handles = 0
    original = loop._run_once  # type: ignore[attr-defined]

    def counted() -> None:
        nonlocal handles
        handles += len(loop._ready)  # type: ignore[attr-defined]
        original()

    loop._run_once = counted  # type: ignore[attr-defined]
    started = time.perf_counter()
    cpu_started = time.process_time()
    await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    loop._run_once = original  # type: ignore[attr-defined]
    return {
        "era": args.era,
        "tool": args.tool,
        "path": path,
        "calls": args.calls,
        "concurrency": args.concurrency,
        "seconds": round(elapsed, 3),
        "us_per_call": round(elapsed / args.calls * 1e6, 1),
        # The process's CPU time (every thread: the activity writer's and the metrics fold's too).
        "cpu_us_per_call": round(cpu / args.calls * 1e6, 1),
        "loop_callbacks_per_call": round(handles / args.calls, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.inprocess", description=__doc__)
    parser.add_argument("--era", choices=(HANDSHAKE, STATELESS), default=HANDSHAKE)
    parser.add_argument("--tool", default="echo")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--server", default="", help="a named server of the bench tenant that selects the tool")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcp_platform.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    asyncio.run(report(args))


async def report(args: argparse.Namespace) -> None:
    """Print the figures, then leave without winding the platform down: under callgrind (50 times slower) the
    loop's close, which cancels the tasks still running (the channel layer's readers among them), sometimes never
    completed, and the run hung after measuring. The process's exit still writes callgrind's counts."""
    print(json.dumps(await run(args)), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
