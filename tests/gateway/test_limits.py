"""The request limits middleware in process: refusals on headers, the body deadline, and a refused body read to its
end before the refusal goes out. (The servers' own bounds, and what a client sees on the wire: tests/e2e.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_platform.gateway.limits import CLOSE, DRAIN_FACTOR, RequestLimitsMiddleware

pytestmark = pytest.mark.anyio

Message = dict[str, Any]
DEADLINE = 10.0


class Client:
    """One request's side of the connection: the messages it will send, and what the server answered."""

    def __init__(self, chunks: list[bytes] | None = None, *, hang_after: bool = False) -> None:
        self.pending = [
            {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1 or hang_after}
            for index, chunk in enumerate(chunks or [])
        ]
        self.sent: list[Message] = []
        self.received_count = 0

    async def receive(self) -> Message:
        if self.pending:
            self.received_count += 1
            return self.pending.pop(0)
        await asyncio.Event().wait()  # a client that sends nothing more
        raise AssertionError("unreachable")

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        return list(self.sent[0].get("headers", []))


def scope(*headers: tuple[bytes, bytes], path: str = "/t/acme/mcp") -> Message:
    return {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "headers": list(headers)}


async def answer_at_once(scope: Message, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 413, "headers": []})
    await send({"type": "http.response.body", "body": b"too large"})


def echo_app(seen: list[Message]) -> Any:
    async def app(scope: Message, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            seen.append(message)
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


async def run(app: Any, request_scope: Message, client: Client) -> None:
    async with asyncio.timeout(DEADLINE):
        await RequestLimitsMiddleware(app)(request_scope, client.receive, client.send)


@pytest.fixture
def limits(settings: Any) -> None:
    settings.MCP_PLATFORM = {
        **settings.MCP_PLATFORM,
        "MAX_HEADER_BYTES": 4096,
        "MAX_REQUEST_BYTES": 1024,
        "BODY_TIMEOUT": 0.2,
    }


async def test_headers_over_the_limit_are_431_and_the_application_never_runs(limits: None) -> None:
    seen: list[Message] = []
    client = Client([b"{}"])
    await run(echo_app(seen), scope((b"host", b"127.0.0.1"), (b"x-padding", b"a" * 4096)), client)
    assert client.status == 431
    assert CLOSE in client.headers
    assert seen == []


async def test_headers_at_the_limit_are_served(limits: None) -> None:
    seen: list[Message] = []
    fixed = (b"host", b"127.0.0.1"), (b"content-length", b"2")
    padding = 4096 - len("/t/acme/mcp") - sum(len(k) + len(v) + 4 for k, v in fixed) - (len("x-padding") + 4)
    request_scope = scope(*fixed, (b"x-padding", b"a" * padding))
    await run(echo_app(seen), request_scope, client := Client([b"{}"]))
    assert client.status == 200
    await run(echo_app(seen), {**request_scope, "path": "/t/acme/mcp/", "raw_path": b"/t/acme/mcp/"}, over := Client())
    assert over.status == 431


async def test_a_second_host_header_is_400(limits: None) -> None:
    seen: list[Message] = []
    client = Client()
    await run(echo_app(seen), scope((b"host", b"127.0.0.1"), (b"host", b"evil.example")), client)
    assert client.status == 400
    assert b"Host" in client.sent[1]["body"]
    assert seen == []


async def test_a_body_that_does_not_arrive_within_the_timeout_is_408_and_the_application_sees_a_disconnect(
    limits: None,
) -> None:
    seen: list[Message] = []
    client = Client([b'{"jsonrpc"'], hang_after=True)
    await run(echo_app(seen), scope((b"host", b"127.0.0.1"), (b"content-length", b"100")), client)
    assert client.status == 408
    assert CLOSE in client.headers
    assert [message["type"] for message in seen] == ["http.request", "http.disconnect"]
    assert len(client.sent) == 2, "the application's own answer after the 408 is dropped"


async def test_a_body_that_arrives_in_time_reaches_the_application_unchanged(limits: None) -> None:
    seen: list[Message] = []
    client = Client([b'{"a":', b"1}"])
    await run(echo_app(seen), scope((b"host", b"127.0.0.1"), (b"content-length", b"7")), client)
    assert client.status == 200
    assert b"".join(message["body"] for message in seen) == b'{"a":1}'
    assert CLOSE not in client.headers


async def test_a_cancellation_while_the_body_is_awaited_is_not_taken_for_the_deadline(limits: None) -> None:
    first_part = asyncio.Event()
    client = Client([b'{"jsonrpc"'], hang_after=True)

    async def app(scope: Message, receive: Any, send: Any) -> None:
        await receive()
        first_part.set()
        await receive()

    serving = asyncio.create_task(run(app, scope((b"host", b"127.0.0.1"), (b"content-length", b"100")), client))
    await first_part.wait()
    serving.cancel()

    with pytest.raises(asyncio.CancelledError):
        await serving
    assert client.sent == [], "no 408: the request was cancelled, not timed out"


async def test_the_deadline_holds_on_a_task_that_was_cancelled_before_and_went_on(limits: None) -> None:
    seen: list[Message] = []
    client = Client([b'{"jsonrpc"'], hang_after=True)

    async def serve_after_a_caught_cancellation() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.sleep(0)
        await run(echo_app(seen), scope((b"host", b"127.0.0.1"), (b"content-length", b"100")), client)

    await serve_after_a_caught_cancellation()
    assert client.status == 408


async def test_a_request_without_a_body_has_no_deadline(limits: None) -> None:
    """A GET stream waits on ``receive`` for the disconnect for as long as it lives."""
    waited = asyncio.Event()

    async def listening_app(scope: Message, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):  # longer than the body timeout
                await receive()
        waited.set()
        await send({"type": "http.response.body", "body": b""})

    client = Client()
    await run(listening_app, scope((b"host", b"127.0.0.1")), client)
    assert waited.is_set()
    assert client.status == 200


async def test_a_refusal_sent_before_the_body_was_read_waits_for_the_rest_of_it_and_closes(limits: None) -> None:
    client = Client([b"x" * 1000] * 3)
    await run(answer_at_once, scope((b"host", b"127.0.0.1"), (b"content-length", b"3000")), client)
    assert client.received_count == 3, "the whole body was read before the answer"
    assert client.status == 413
    assert CLOSE in client.headers


async def test_a_declared_body_beyond_the_drain_bound_is_refused_without_reading_it(limits: None) -> None:
    declared = str(DRAIN_FACTOR * 1024 + 1).encode()
    client = Client([b"x" * 1000] * 3)
    await run(answer_at_once, scope((b"host", b"127.0.0.1"), (b"content-length", declared)), client)
    assert client.received_count == 0
    assert client.status == 413
    assert CLOSE in client.headers
