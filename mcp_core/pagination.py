"""Opaque pagination cursors: the last key of a page, wrapped so clients cannot rely on its shape.

A cursor is base64url (no padding) of ``{"v":1,"k":<last key>}``. It is not signed: it only says where
the next page starts, and selectors scope every page by tenant whatever key a client sends back.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

import orjson

from mcp_core.errors import InvalidParams
from mcp_core.text import storable

MAX_CURSOR_LENGTH = 2048
_VERSION = 1
_ALPHABET = re.compile(r"[A-Za-z0-9_-]+")


def encode_cursor(last_key: str) -> str:
    """The cursor for the page after ``last_key``.

    Raises ValueError when the cursor would exceed ``MAX_CURSOR_LENGTH`` characters (keys are the
    server's own, so this is a programming error rather than a client's).
    """
    payload = orjson.dumps({"v": _VERSION, "k": last_key})
    cursor = base64.urlsafe_b64encode(payload).rstrip(b"=").decode("ascii")
    if len(cursor) > MAX_CURSOR_LENGTH:
        raise ValueError(f"cursor for key of {len(last_key)} characters exceeds {MAX_CURSOR_LENGTH}")
    return cursor


def decode_cursor(cursor: Any) -> str | None:
    """The last key carried by a client's ``cursor`` param; None when no cursor was sent.

    Raises ``InvalidParams("Invalid cursor")`` for anything :func:`encode_cursor` did not produce.
    """
    if cursor is None:
        return None
    invalid = InvalidParams("Invalid cursor")
    if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_LENGTH or not _ALPHABET.fullmatch(cursor):
        raise invalid
    try:
        payload = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = orjson.loads(payload)
    except (binascii.Error, ValueError):
        raise invalid from None
    if not isinstance(data, dict) or data.keys() != {"v", "k"}:
        raise invalid
    version, key = data["v"], data["k"]
    if type(version) is not int or version != _VERSION or not isinstance(key, str) or not storable(key):
        raise invalid
    # Base64 and JSON both have several spellings of the same value (unused trailing bits, escapes);
    # accepting only ours keeps a cursor's meaning to one string.
    try:
        canonical = encode_cursor(key)
    except ValueError:
        raise invalid from None
    if canonical != cursor:
        raise invalid
    return key
