"""Writing HTTP responses over ASGI: JSON bodies, JSON-RPC errors, and the start of SSE streams."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import psycopg
from django.db import InterfaceError, OperationalError

from mcp_core import jsonrpc
from mcp_core.errors import ServiceUnavailable, error_to_wire, retry_after_seconds

Send = Callable[[dict[str, Any]], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

SSE_HEADERS: Headers = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


def header_list(extra: Iterable[tuple[str, str]] = ()) -> Headers:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in extra]


async def send_body(
    send: Send, status: int, body: bytes, *, content_type: str | None, headers: Headers | None = None
) -> None:
    all_headers = list(headers or [])
    if content_type:
        all_headers.append((b"content-type", content_type.encode("latin-1")))
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def send_json(send: Send, status: int, body: bytes, headers: Headers | None = None) -> None:
    await send_body(send, status, body, content_type="application/json", headers=headers)


async def send_empty(send: Send, status: int, headers: Headers | None = None) -> None:
    await send_body(send, status, b"", content_type=None, headers=headers)


def error_headers(exc: BaseException) -> Headers:
    """The HTTP headers an error adds to its response: ``Retry-After`` for one that says when to try again."""
    retry_after = getattr(exc, "retry_after", None)
    if isinstance(retry_after, (int, float)) and not isinstance(retry_after, bool):
        return [(b"retry-after", str(retry_after_seconds(retry_after)).encode())]
    return []


# How soon a client may try again when the database could not be reached (a restart or a failover takes seconds).
UNAVAILABLE_RETRY_AFTER = 5.0
# A database that cannot be reached, as Django's ORM raises it and as the gateway's own async PostgreSQL path
# (``mcp_infra.postgresql.aio``) does.
DATABASE_UNREACHABLE = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)


def _told(exc: BaseException) -> BaseException:
    """The exception the client is told about for ``exc``. A database that cannot be reached (refused, reset, a
    connection the server ended) is the service unavailable for a moment, 503 with ``Retry-After``; anything else
    is itself (an unknown exception is an internal error, 500)."""
    if isinstance(exc, DATABASE_UNREACHABLE):
        return ServiceUnavailable(
            "Service temporarily unavailable: try again shortly", retry_after=UNAVAILABLE_RETRY_AFTER
        )
    return exc


def wire_error(exc: BaseException) -> tuple[int, dict[str, Any], Headers]:
    """The gateway's side of ``error_to_wire``: what the shell alone can name (an unreachable database) first, then
    the HTTP status, the JSON-RPC error object and the headers (``Retry-After``) of ``exc``. Every error the
    gateway answers, as a response or as a message on a stream, goes through here."""
    told = _told(exc)
    status, error = error_to_wire(told)
    return status, error, error_headers(told)


async def send_error(
    send: Send, exc: BaseException, request_id: str | int | None = None, headers: Headers | None = None
) -> None:
    """The one place an exception becomes an HTTP error response (status, JSON-RPC body, ``Retry-After``)."""
    status, error, extra = wire_error(exc)
    await send_json(send, status, jsonrpc.encode_error(request_id, error), [*(headers or []), *extra])


async def start_sse(send: Send, headers: Headers | None = None) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *(headers or [])]})


async def send_chunk(send: Send, chunk: bytes, *, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": more})
