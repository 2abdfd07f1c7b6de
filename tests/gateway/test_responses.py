"""The one place an exception becomes an HTTP error: a database that cannot be reached is a 503 with ``Retry-After``
whichever way it was reached; every other unknown exception stays a 500 that says nothing."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from django.db import InterfaceError, OperationalError

from mcp_platform.gateway.responses import send_error

pytestmark = pytest.mark.anyio


async def sent(exc: BaseException) -> tuple[int, dict[str, bytes], dict[str, Any]]:
    messages: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    await send_error(send, exc, 7)
    start, body = messages
    return start["status"], dict(start["headers"]), json.loads(body["body"])


@pytest.mark.parametrize(
    "exc",
    [
        OperationalError("connection refused"),
        InterfaceError("connection already closed"),
        psycopg.OperationalError("the database system is shutting down"),
        psycopg.InterfaceError("the connection is closed"),
    ],
    ids=lambda exc: f"{type(exc).__module__}.{type(exc).__name__}",
)
async def test_a_database_that_cannot_be_reached_is_a_503_with_retry_after(exc: BaseException):
    status, headers, body = await sent(exc)
    assert (status, headers[b"retry-after"]) == (503, b"5")
    assert body["id"] == 7
    assert body["error"]["code"] == -32603
    assert body["error"]["message"] == "Service temporarily unavailable: try again shortly"
    assert "connection" not in json.dumps(body), "the database's own words stay in the log"


async def test_any_other_unknown_exception_is_a_500_that_says_nothing():
    status, headers, body = await sent(ValueError("secret detail"))
    assert status == 500 and b"retry-after" not in headers
    assert body["error"] == {"code": -32603, "message": "Internal error"}
