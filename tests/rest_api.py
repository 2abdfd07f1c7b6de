"""A small real REST API (Starlette under uvicorn, in a process of its own) that HTTP tools are tested against.

It checks credentials as a real API would (bearer, API key in a header or the query, basic, OAuth client
credentials with tokens it issued), echoes what it received, and misbehaves on request (status codes, big bodies,
silence, a body that drips, redirects). ``start_rest_api`` runs it; the credentials it accepts are the constants
below.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import secrets
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

BEARER_TOKEN = "bearer-token-5f1c9a2e"
API_KEY = "api-key-8e41d07b"
BASIC = "robot:pass-3b9d66f1"
CLIENT_ID = "tool-client"
CLIENT_SECRET = "client-secret-a47c02d9"

_issued: dict[str, int] = {}
_counter = itertools.count(1)
_revoked: set[str] = set()


def _echo(request: Request, body: object = None, status: int = 200) -> JSONResponse:
    return JSONResponse(
        {
            "method": request.method,
            "path": request.url.path,
            "path_params": request.path_params,
            "query": [[k, v] for k, v in request.query_params.multi_items()],
            "headers": {k: v for k, v in request.headers.items() if k.startswith("x-") or k == "accept"},
            "body": body,
        },
        status_code=status,
    )


async def echo(request: Request) -> JSONResponse:
    raw = await request.body()
    body = (await request.json()) if raw else None
    return _echo(request, body, 201 if request.method == "POST" else 200)


def _refused(reason: str) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=401)


async def auth_bearer(request: Request) -> Response:
    if request.headers.get("authorization") != f"Bearer {BEARER_TOKEN}":
        return _refused("bad bearer token")
    return _echo(request)


async def auth_header(request: Request) -> Response:
    return _echo(request) if request.headers.get("x-api-key") == API_KEY else _refused("bad API key")


async def auth_query(request: Request) -> Response:
    return _echo(request) if request.query_params.get("api_key") == API_KEY else _refused("bad API key")


async def auth_basic(request: Request) -> Response:
    expected = "Basic " + base64.b64encode(BASIC.encode()).decode()
    return _echo(request) if request.headers.get("authorization") == expected else _refused("bad credentials")


async def oauth_token(request: Request) -> Response:
    form = await request.form()
    expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
    if request.headers.get("authorization") != expected or form.get("grant_type") != "client_credentials":
        return JSONResponse({"error": "invalid_client"}, status_code=401)
    token = f"issued-{next(_counter)}-{secrets.token_hex(4)}"
    _issued[token] = 0
    return JSONResponse({"access_token": token, "token_type": "Bearer", "expires_in": 3600, "scope": form.get("scope")})


async def auth_oauth(request: Request) -> Response:
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    if token not in _issued or token in _revoked:
        return _refused("unknown token")
    _issued[token] += 1
    return _echo(request)


async def oauth_revoke_all(request: Request) -> Response:
    _revoked.update(_issued)
    return JSONResponse({"revoked": len(_revoked)})


async def oauth_stats(request: Request) -> Response:
    return JSONResponse({"issued": len(_issued)})


async def status(request: Request) -> Response:
    code = int(request.path_params["code"])
    return PlainTextResponse(f"the API says no ({code}): " + "detail " * 300, status_code=code)


async def big(request: Request) -> Response:
    return PlainTextResponse("x" * int(request.query_params["n"]))


async def silent(request: Request) -> Response:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


# Open drips per ``key``: how many are being sent now, the most at once, how many ended; and who waits for a change.
_drips: dict[str, dict[str, int]] = {}
_drip_waiters: list[anyio.Event] = []


def _drip_changed() -> None:
    while _drip_waiters:
        _drip_waiters.pop().set()


async def drip(request: Request) -> Response:
    # A slow API (or an endless event stream): one byte every ``every`` seconds, ``n`` of them (never ending when
    # unset). Each read of it returns within a read timeout; only a deadline on the whole call ends it.
    every = float(request.query_params.get("every", "2"))
    count = int(request.query_params.get("n", "0")) or None
    stats = _drips.setdefault(request.query_params.get("key", ""), {"open": 0, "peak": 0, "done": 0})

    async def bytes_slowly() -> Any:
        stats["open"] += 1
        stats["peak"] = max(stats["peak"], stats["open"])
        _drip_changed()
        try:
            sent = 0
            while count is None or sent < count:
                yield b"."
                sent += 1
                await anyio.sleep(every)
            stats["done"] += 1
        finally:
            stats["open"] -= 1
            _drip_changed()

    return StreamingResponse(bytes_slowly(), media_type=request.query_params.get("type", "text/plain"))


async def drip_stats(request: Request) -> Response:
    """The drips of ``key``; with ``open_at_least``, once that many are open."""
    stats = _drips.setdefault(request.query_params.get("key", ""), {"open": 0, "peak": 0, "done": 0})
    while stats["open"] < int(request.query_params.get("open_at_least", "0")):
        changed = anyio.Event()
        _drip_waiters.append(changed)
        await changed.wait()
    return JSONResponse(stats)


async def echo_authorization(request: Request) -> Response:
    # A careless API that repeats the credential it was sent.
    return PlainTextResponse(f"you sent: {request.headers.get('authorization')} / {request.headers.get('x-api-key')}")


async def reflect(request: Request) -> Response:
    """A careless API that quotes everything it was sent (the raw URL with its encoded query, every header, the
    body) after ``pad``, as ``text``, ``json`` (non-ASCII raw) or ``json-ascii`` (``\\u`` escapes), with the
    status the path names: what a reflected argument or an error page can hand back."""
    raw = (await request.body()).decode(errors="replace")
    seen = {
        "pad": request.query_params.get("pad", ""),
        "url": str(request.url),
        "query": [[k, v] for k, v in request.query_params.multi_items()],
        "headers": dict(request.headers.items()),
        "body": raw,
    }
    status_code = int(request.path_params["code"])
    shape = request.path_params["shape"]
    if shape == "text":
        lines = [seen["pad"] + str(request.url), *(f"{k}: {v}" for k, v in request.headers.items()), raw]
        return PlainTextResponse("\n".join(lines), status_code=status_code)
    text = json.dumps(seen, ensure_ascii=shape == "json-ascii")
    return Response(text, status_code=status_code, media_type="application/json")


async def redirect(request: Request) -> Response:
    return RedirectResponse(request.query_params["to"], status_code=302)


async def image(request: Request) -> Response:
    return Response(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16, media_type="image/png")


app = Starlette(
    routes=[
        Route("/pets/{pet_id}", echo, methods=["GET", "DELETE", "PUT", "PATCH"]),
        Route("/pets", echo, methods=["POST", "GET"]),
        Route("/auth/bearer", auth_bearer),
        Route("/auth/header", auth_header),
        Route("/auth/query", auth_query),
        Route("/auth/basic", auth_basic),
        Route("/auth/oauth", auth_oauth),
        Route("/oauth/token", oauth_token, methods=["POST"]),
        Route("/oauth/revoke-all", oauth_revoke_all, methods=["POST"]),
        Route("/oauth/stats", oauth_stats),
        Route("/status/{code}", status),
        Route("/big", big),
        Route("/silent", silent),
        Route("/drip", drip, methods=["GET", "POST"]),
        Route("/drip/stats", drip_stats),
        Route("/echo-authorization", echo_authorization),
        Route("/redirect", redirect),
        Route("/reflect/{shape}/{code:int}", reflect, methods=["GET", "POST"]),
        Route("/image", image),
    ]
)


def secret_spellings(secret: str) -> set[str]:
    """Every way the platform, or an API reflecting what the platform sent, may write ``secret``: raw,
    percent-encoded (either hex case, ``+`` or ``%20`` for a space, as httpx encodes a query), JSON-escaped (with
    and without ``\\u`` escapes, ``\\/``) and base64."""
    upper = quote(secret, safe="")
    found = {
        secret,
        upper,
        re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), upper),
        quote_plus(secret),
        quote(secret, safe="/"),
        str(httpx.QueryParams({"k": secret})).split("=", 1)[1],
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret).replace("/", "\\/")[1:-1],
        base64.b64encode(secret.encode()).decode(),
    }
    return {s for s in found if len(s) >= 4}


@dataclass(frozen=True)
class RestApi:
    base: str


def start_rest_api(stack: ExitStack, log_dir: Path) -> RestApi:
    """Run this app under uvicorn on a free loopback port until ``stack`` closes."""
    from tests.e2e.live import ManagedProcess, free_port, wait_for_port
    from tests.upstreams import GRACEFUL_SHUTDOWN_SECONDS

    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", "tests.rest_api:app", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--timeout-graceful-shutdown", str(GRACEFUL_SHUTDOWN_SECONDS)]
    process = ManagedProcess.start("rest-api", [*argv, "--log-level", "warning"], dict(os.environ), log_dir)
    stack.callback(process.stop)
    wait_for_port(process, port)
    return RestApi(f"http://127.0.0.1:{port}")
