"""Server-Sent Events framing: events, comments, ``retry:`` and the event-id scheme that names a stream.

Event ids are ``<stream id>.<sequence>`` so a ``Last-Event-ID`` tells the server which stream to replay
and from where.
"""

from __future__ import annotations

import re

_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_STREAM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Canonical decimal only (no sign, no leading zeros), so each sequence number has exactly one id.
_EVENT_ID = re.compile(r"([A-Za-z0-9_-]{1,64})\.(0|[1-9][0-9]{0,18})")
_MAX_SEQ = 10**19 - 1


def _field_value(name: str, value: str) -> bytes:
    if "\n" in value or "\r" in value:
        raise ValueError(f"an SSE {name} cannot contain a line break")
    if name == "id" and "\0" in value:
        # Browsers ignore an id holding NUL, which would silently break resumption.
        raise ValueError("an SSE id cannot contain NUL")
    return value.encode("utf-8")


def _retry_value(retry_ms: int) -> bytes:
    if isinstance(retry_ms, bool) or not isinstance(retry_ms, int) or retry_ms < 0:
        raise ValueError("retry must be a non-negative integer of milliseconds")
    return str(retry_ms).encode("ascii")


def event(
    data: str | bytes,
    *,
    id: str | None = None,
    event: str | None = None,
    retry_ms: int | None = None,
) -> bytes:
    """One SSE event: ``id:``, ``event:``, ``retry:`` then one ``data:`` line per line of ``data``.

    Line breaks in ``data`` (``\\n``, ``\\r\\n`` or ``\\r``) become separate ``data:`` lines, which the
    client joins back with ``\\n``; empty data is a single empty ``data:`` line. Bytes are taken as
    UTF-8 already. Raises ValueError for a line break in ``id`` or ``event``, NUL in ``id``, or a
    negative ``retry_ms``.
    """
    lines: list[bytes] = []
    if id is not None:
        lines.append(b"id: " + _field_value("id", id))
    if event is not None:
        lines.append(b"event: " + _field_value("event", event))
    if retry_ms is not None:
        lines.append(b"retry: " + _retry_value(retry_ms))
    payload = data.encode("utf-8") if isinstance(data, str) else data
    lines.extend(b"data: " + line for line in _LINE_BREAK.split(payload))
    return b"\n".join(lines) + b"\n\n"


def comment(text: str = "") -> bytes:
    """A comment line (``: text``), which clients ignore: the keep-alive that also flushes headers.

    Raises ValueError when ``text`` holds a line break.
    """
    return b": " + _field_value("comment", text) + b"\n\n"


def priming(event_id: str, retry_ms: int | None) -> bytes:
    """The priming event of a resumable stream: its id, an optional ``retry:``, and empty data.

    Raises ValueError like :func:`event`.
    """
    return event("", id=event_id, retry_ms=retry_ms)


def retry(retry_ms: int) -> bytes:
    """A bare ``retry:`` field, sent before closing a stream early. Raises ValueError if negative."""
    return b"retry: " + _retry_value(retry_ms) + b"\n\n"


def make_event_id(stream_id: str, seq: int) -> str:
    """The id of event ``seq`` of stream ``stream_id``.

    Raises ValueError unless ``stream_id`` is 1-64 of ``[A-Za-z0-9_-]`` and ``seq`` is an integer in
    0 to 10**19 - 1.
    """
    if not _STREAM_ID.fullmatch(stream_id):
        raise ValueError("a stream id is 1-64 characters of [A-Za-z0-9_-]")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= _MAX_SEQ:
        raise ValueError("an event sequence number is an integer in 0 to 10**19 - 1")
    return f"{stream_id}.{seq}"


def parse_event_id(value: str) -> tuple[str, int] | None:
    """``(stream_id, seq)`` of an id made by :func:`make_event_id`; None for anything else."""
    match = _EVENT_ID.fullmatch(value)
    if match is None:
        return None
    return match.group(1), int(match.group(2))
