"""Opaque pagination cursors: round trips, and refusal of anything the server did not issue."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_core.errors import InvalidParams
from mcp_core.pagination import MAX_CURSOR_LENGTH, decode_cursor, encode_cursor
from mcp_core.text import storable

BASE64URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def b64(payload: bytes) -> str:
    return base64.urlsafe_b64encode(payload).rstrip(b"=").decode()


def test_a_cursor_carries_its_last_key_back() -> None:
    assert decode_cursor(encode_cursor("tool_b")) == "tool_b"


def test_a_cursor_is_url_safe_base64_without_padding() -> None:
    cursor = encode_cursor("é?/+")
    assert set(cursor) <= set(BASE64URL_ALPHABET)
    assert base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)) == '{"v":1,"k":"é?/+"}'.encode()


def test_no_cursor_means_the_first_page() -> None:
    assert decode_cursor(None) is None


def test_the_empty_key_round_trips() -> None:
    assert decode_cursor(encode_cursor("")) == ""


@pytest.mark.parametrize("cursor", [1, 1.5, True, [], {}, {"v": 1, "k": "a"}, b"abc"])
def test_a_cursor_that_is_not_a_string_is_invalid_params(cursor: Any) -> None:
    with pytest.raises(InvalidParams, match="Invalid cursor"):
        decode_cursor(cursor)


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not a cursor",
        "abc=",
        "a",
        b64(b"not json"),
        b64(b"\xff\xfe"),
        b64(b'["v", 1]'),
        b64(b'{"v":2,"k":"a"}'),
        b64(b'{"v":true,"k":"a"}'),
        b64(b'{"v":1.0,"k":"a"}'),
        b64(b'{"v":1,"k":5}'),
        b64(b'{"v":1}'),
        b64(b'{"v":1,"k":"a","x":0}'),
        b64(b'{"k":"a","v":1}'),
        b64(b'{"v": 1, "k": "a"}'),
        b64(b'{"v":1,"k":"\\u0061"}'),
        base64.urlsafe_b64encode(b'{"v":1,"k":"ab"}').decode(),
    ],
)
def test_a_cursor_the_server_did_not_issue_is_invalid_params(cursor: str) -> None:
    with pytest.raises(InvalidParams, match="Invalid cursor"):
        decode_cursor(cursor)


def test_a_cursor_with_altered_unused_trailing_bits_is_refused() -> None:
    cursor = encode_cursor("ab")
    # 16 payload bytes: the last base64 character carries 4 bits of data and 2 unused ones.
    assert len(cursor) % 4 == 2
    tampered = cursor[:-1] + BASE64URL_ALPHABET[BASE64URL_ALPHABET.index(cursor[-1]) ^ 1]
    assert base64.urlsafe_b64decode(tampered + "==") == base64.urlsafe_b64decode(cursor + "==")
    with pytest.raises(InvalidParams):
        decode_cursor(tampered)


def test_an_overlong_cursor_is_refused_without_decoding() -> None:
    with pytest.raises(InvalidParams):
        decode_cursor("A" * (MAX_CURSOR_LENGTH + 1))


def test_a_key_too_long_for_a_cursor_cannot_be_encoded() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        encode_cursor("k" * MAX_CURSOR_LENGTH)


def test_a_cursor_whose_key_holds_nul_is_invalid() -> None:
    # No stored name or URI holds U+0000: such a key would only reach the database to fail there.
    with pytest.raises(InvalidParams, match="Invalid cursor"):
        decode_cursor(encode_cursor("tool\x00name"))


@given(st.text(max_size=300).filter(storable))
def test_cursors_round_trip(key: str) -> None:
    cursor = encode_cursor(key)
    assert len(cursor) <= MAX_CURSOR_LENGTH
    assert decode_cursor(cursor) == key


@given(st.text() | st.from_regex(r"[A-Za-z0-9_-]{0,60}", fullmatch=True))
def test_garbage_cursors_are_invalid_params(cursor: str) -> None:
    try:
        key = decode_cursor(cursor)
    except InvalidParams:
        return
    # Anything accepted must be exactly what the server would have issued.
    assert key is not None
    assert encode_cursor(key) == cursor


@given(st.binary(max_size=200))
def test_base64_of_arbitrary_bytes_is_refused_unless_it_is_a_real_cursor(payload: bytes) -> None:
    cursor = b64(payload)
    try:
        key = decode_cursor(cursor)
    except InvalidParams:
        return
    assert key is not None
    assert encode_cursor(key) == cursor
