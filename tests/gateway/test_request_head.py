"""What the gateway reads from a request's header fields, in one pass each: the limits' ``Head`` and the
consumers' field dictionary, checked against the plain definitions on arbitrary header lists."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcp_platform.gateway.handshake import scope_headers
from mcp_platform.gateway.limits import Head

names = st.sampled_from([b"host", b"content-length", b"transfer-encoding", b"accept", b"x-a", b"X-A", b"mcp-method"])
values = st.sampled_from([b"", b"0", b"12", b"007", b"-1", b"1.5", b"chunked", b"a,b", b"\xe9t\xe9"])
header_lists = st.lists(st.tuples(names, values), max_size=8)


def scope_of(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {"path": "/t/x/mcp", "raw_path": b"/t/x/mcp", "query_string": b"a=1", "headers": headers}


@given(header_lists)
def test_the_head_counts_what_the_wire_carried(headers: list[tuple[bytes, bytes]]) -> None:
    head = Head.of(scope_of(headers))

    assert head.size == len(b"/t/x/mcp") + len(b"a=1") + sum(len(n) + len(v) + 4 for n, v in headers)
    assert head.hosts == sum(1 for n, _ in headers if n == b"host")
    lengths = [v for n, v in headers if n == b"content-length"]
    expected_length = (int(lengths[0]) if lengths[0].isdigit() else None) if lengths else None
    assert head.declared_length == expected_length
    chunked = any(n == b"transfer-encoding" for n, _ in headers)
    assert head.body_expected == (chunked or (bool(lengths) and expected_length != 0))


@given(header_lists)
def test_repeated_fields_are_joined_in_order_and_names_lower_cased(headers: list[tuple[bytes, bytes]]) -> None:
    expected: dict[str, list[str]] = {}
    for name, value in headers:
        expected.setdefault(name.decode("latin-1").lower(), []).append(value.decode("latin-1"))

    assert scope_headers(scope_of(headers)) == {name: ", ".join(found) for name, found in expected.items()}


def test_a_field_without_repeats_is_its_value() -> None:
    fields = scope_headers(scope_of([(b"accept", b"application/json"), (b"Mcp-Method", b"tools/call")]))
    assert fields == {"accept": "application/json", "mcp-method": "tools/call"}
