"""Server-Sent Events framing and the stream-naming event ids."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_core.sse import comment, event, make_event_id, parse_event_id, priming, retry


def parse_sse(stream: bytes) -> list[dict[str, str]]:
    """A reader following the WHATWG event-stream algorithm closely enough to check our framing."""
    events: list[dict[str, str]] = []
    fields: dict[str, str] = {}
    data: list[str] = []
    for line in re.split(r"\r\n|\r|\n", stream.decode("utf-8")):
        if not line:
            if data or fields:
                events.append({**fields, "data": "\n".join(data)} if data else dict(fields))
            fields, data = {}, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        else:
            fields[name] = value
    return events


def test_an_event_writes_id_event_retry_then_data() -> None:
    framed = event('{"a":1}', id="s.1", event="message", retry_ms=500)
    assert framed == b'id: s.1\nevent: message\nretry: 500\ndata: {"a":1}\n\n'


def test_an_event_with_only_data_is_one_data_line() -> None:
    assert event("hello") == b"data: hello\n\n"


def test_multi_line_data_becomes_several_data_lines_whatever_the_line_break() -> None:
    assert event("a\nb\r\nc\rd") == b"data: a\ndata: b\ndata: c\ndata: d\n\n"


def test_bytes_data_is_framed_as_is() -> None:
    assert event("é".encode()) == "data: é\n\n".encode()
    assert event(b"x\ny") == b"data: x\ndata: y\n\n"


def test_empty_data_is_a_single_empty_data_line() -> None:
    assert event("") == b"data: \n\n"


def test_trailing_line_break_in_data_keeps_an_empty_last_line() -> None:
    assert parse_sse(event("a\n")) == [{"data": "a\n"}]


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\r\n"])
def test_line_breaks_in_id_or_event_name_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="line break"):
        event("x", id=bad)
    with pytest.raises(ValueError, match="line break"):
        event("x", event=bad)


def test_nul_in_an_event_id_is_refused() -> None:
    with pytest.raises(ValueError, match="NUL"):
        event("x", id="a\x00b")


@pytest.mark.parametrize("bad", [-1, True])
def test_retry_must_be_a_non_negative_integer(bad: int) -> None:
    with pytest.raises(ValueError, match="retry"):
        event("x", retry_ms=bad)
    with pytest.raises(ValueError, match="retry"):
        retry(bad)


def test_a_comment_is_a_colon_line_clients_ignore() -> None:
    assert comment("keep-alive") == b": keep-alive\n\n"
    assert comment() == b": \n\n"
    assert parse_sse(comment("keep-alive")) == []


def test_a_comment_cannot_hold_a_line_break() -> None:
    with pytest.raises(ValueError, match="line break"):
        comment("a\nb")


def test_priming_event_carries_the_id_and_empty_data() -> None:
    assert priming("abc.0", None) == b"id: abc.0\ndata: \n\n"
    assert priming("abc.0", 1000) == b"id: abc.0\nretry: 1000\ndata: \n\n"
    assert parse_sse(priming("abc.0", None)) == [{"id": "abc.0", "data": ""}]


def test_retry_alone_is_a_bare_retry_field() -> None:
    assert retry(2500) == b"retry: 2500\n\n"
    assert retry(0) == b"retry: 0\n\n"


def test_event_ids_name_their_stream_and_sequence() -> None:
    assert make_event_id("get-stream_1", 42) == "get-stream_1.42"
    assert parse_event_id("get-stream_1.42") == ("get-stream_1", 42)
    assert parse_event_id("s.0") == ("s", 0)


@pytest.mark.parametrize("stream_id", ["", "a.b", "has space", "é", "a" * 65, "a\n"])
def test_invalid_stream_ids_are_refused(stream_id: str) -> None:
    with pytest.raises(ValueError, match="stream id"):
        make_event_id(stream_id, 1)


@pytest.mark.parametrize("seq", [-1, 10**19, True])
def test_invalid_sequence_numbers_are_refused(seq: int) -> None:
    with pytest.raises(ValueError, match="sequence"):
        make_event_id("s", seq)


@pytest.mark.parametrize(
    "value",
    ["", "s", "s.", ".1", "s.01", "s.-1", "s.+1", "s.1.2", "s.1 ", "a b.1", "s.\u0661", "s." + "9" * 20],
)
def test_foreign_event_ids_do_not_parse(value: str) -> None:
    assert parse_event_id(value) is None


stream_ids = st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True)


@given(stream_ids, st.integers(min_value=0, max_value=10**19 - 1))
def test_event_ids_round_trip(stream_id: str, seq: int) -> None:
    assert parse_event_id(make_event_id(stream_id, seq)) == (stream_id, seq)


@given(st.text(), st.text().filter(lambda s: "\n" not in s and "\r" not in s and "\0" not in s))
def test_a_reader_gets_back_the_data_with_line_breaks_normalised(data: str, event_id: str) -> None:
    (parsed,) = parse_sse(event(data, id=event_id, event="message"))
    assert parsed["data"] == re.sub(r"\r\n|\r", "\n", data)
    assert parsed["id"] == event_id
    assert parsed["event"] == "message"
