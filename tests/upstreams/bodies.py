"""What the test upstreams' ASGI wrappers share: a POST body read whole, and a ``receive`` that hands it on."""

from __future__ import annotations

from typing import Any


async def body_of(receive: Any) -> bytes:
    """The whole request body, however many messages it came in."""
    chunks, more = [], True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)


def replaying(body: bytes, receive: Any) -> Any:
    """A ``receive`` that gives the wrapped app ``body`` once, then whatever the connection sends next."""
    replayed = False

    async def replay() -> Any:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
