"""A request leaves no reference cycles behind: everything it made is freed when it ends, not by the garbage
collector. Each cycle's objects survive the young collections while their request is in flight and are found
only by the older ones, whose pauses set the endpoint's tail latency (48 objects a request, about a tenth of
a request's CPU, before the cycles were broken).

Requests served from the catalog memo are checked: ``resources/read`` queries the database, and every query
Django compiles leaves a cycle of its own (``SQLCompiler.get_select``'s recursive inner function)."""

from __future__ import annotations

import asyncio
import gc
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_platform.asgi import application
from tests.gateway.conftest import ACCEPT_BOTH, INIT_PARAMS, META, V, http_scope, request, rpc

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

MCP = "/t/conformance/mcp"
FEW, MANY = 40, 200


async def post(headers: dict[str, str], message: dict[str, Any]) -> tuple[int, bytes]:
    """One POST through the ASGI application, driven as a server drives it, with nothing here that makes a cycle
    of its own (no closures kept, no test communicator)."""
    body = json.dumps(message).encode()
    all_headers = {"host": "127.0.0.1:8000", "content-type": "application/json", "accept": ACCEPT_BOTH}
    scope = http_scope("POST", MCP, {**all_headers, "content-length": str(len(body)), **headers})
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    inbox.put_nowait({"type": "http.request", "body": body, "more_body": False})
    outbox: list[dict[str, Any]] = []
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        return await inbox.get()

    async def send(message: dict[str, Any]) -> None:
        outbox.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            done.set()
            inbox.put_nowait({"type": "http.disconnect"})

    app = asyncio.ensure_future(application(scope, receive, send))
    await asyncio.wait_for(done.wait(), 10)
    await asyncio.wait_for(app, 10)
    return outbox[0]["status"], b"".join(m.get("body", b"") for m in outbox[1:])


@pytest.fixture
def saved_garbage() -> Iterator[list[Any]]:
    """The collector keeps what it finds (``DEBUG_SAVEALL``) and runs only when asked, for the test's duration."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


def collected(garbage: list[Any]) -> tuple[int, list[tuple[str, int]]]:
    """What the collector found since ``garbage`` was last cleared: how many objects, and the commonest kinds."""
    gc.collect()
    kinds = Counter(getattr(thing, "__qualname__", type(thing).__qualname__) for thing in garbage)
    count = len(garbage)
    garbage.clear()
    return count, kinds.most_common(8)


async def rounds(headers: dict[str, str], messages: list[dict[str, Any]], count: int) -> None:
    for number in range(count):
        for message in messages:
            status, body = await post(headers, {**message, "id": 100 + number})
            assert status == 200 and b'"error"' not in body, body


async def assert_no_cycles_per_request(headers: dict[str, str], messages: list[dict[str, Any]], garbage: list[Any]):
    """Two batches of rounds, one five times the other: whatever a request leaves in a cycle grows with the
    number of requests, while the test runner's own leftovers (a few dozen objects, at times) do not."""
    await rounds(headers, messages, 1)  # warm: caches filled, lazy imports done
    collected(garbage)
    await rounds(headers, messages, FEW)
    few, _ = collected(garbage)
    await rounds(headers, messages, MANY)
    many, kinds = collected(garbage)
    extra = (MANY - FEW) * len(messages)
    assert many - few < extra, (
        f"{many} objects freed only by the collector after {MANY} rounds ({few} after {FEW}): {kinds}"
    )


def stateless(method: str, params: dict[str, Any], name: str) -> tuple[dict[str, str], dict[str, Any]]:
    headers = {"mcp-protocol-version": V, "mcp-method": method, "mcp-name": name}
    return headers, rpc(method, {**params, "_meta": META})


async def test_stateless_requests_leave_no_cycles(conformance, saved_garbage):
    for method, params, name in (
        ("tools/call", {"name": "test_simple_text", "arguments": {}}, "test_simple_text"),
        ("prompts/get", {"name": "test_simple_prompt"}, "test_simple_prompt"),
    ):
        headers, message = stateless(method, params, name)
        await assert_no_cycles_per_request(headers, [message], saved_garbage)


async def test_session_requests_leave_no_cycles(conformance, saved_garbage):
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS))
    session = reply.headers["mcp-session-id"]
    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    initialized = await request("POST", MCP, body=rpc("notifications/initialized", id=None), headers=headers)
    assert initialized.status == 202
    messages = [
        rpc("tools/call", {"name": "test_simple_text", "arguments": {}}),
        rpc("prompts/get", {"name": "test_simple_prompt"}),
        rpc("tools/list"),
    ]
    await assert_no_cycles_per_request(headers, messages, saved_garbage)
