"""The 2026-07-28 mirrored-header rules: MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-*."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_core.errors import HeaderMismatch
from mcp_core.http import encode_header_value
from mcp_core.standard_headers import (
    check_param_headers,
    check_standard_headers,
    header_annotations,
    header_matches,
)

V = "2026-07-28"


def headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    found = {"mcp-protocol-version": V, "mcp-method": method, **extra}
    if name is not None:
        found["mcp-name"] = name
    return found


def test_matching_headers_pass():
    check_standard_headers(method="tools/list", params={}, headers=headers("tools/list"), version=V)
    check_standard_headers(
        method="tools/call", params={"name": "echo"}, headers=headers("tools/call", "echo"), version=V
    )
    check_standard_headers(
        method="resources/read", params={"uri": "a://b"}, headers=headers("resources/read", "a://b"), version=V
    )


@pytest.mark.parametrize(
    ("method", "params", "sent"),
    [
        ("tools/list", {}, {"mcp-method": "tools/list"}),  # no MCP-Protocol-Version
        ("tools/list", {}, {"mcp-protocol-version": "2025-11-25", "mcp-method": "tools/list"}),
        ("tools/list", {}, {"mcp-protocol-version": V}),  # no Mcp-Method
        ("tools/list", {}, headers("prompts/list")),
        ("tools/list", {}, headers("TOOLS/LIST")),  # values are case-sensitive
        ("tools/call", {"name": "echo"}, headers("tools/call")),  # no Mcp-Name
        ("tools/call", {"name": "echo"}, headers("tools/call", "Echo")),
        ("prompts/get", {"name": "p"}, headers("prompts/get", "q")),
        ("resources/read", {"uri": "a://b"}, headers("resources/read", "a://c")),
        ("tools/call", {}, headers("tools/call", "echo")),  # a name header for a body without one
        ("tools/call", {"name": "echo"}, headers("tools/call", "=?base64?!!?=")),
        ("tools/call", {"name": "echo"}, headers("tools/call", "ec\x01ho")),
    ],
)
def test_missing_or_disagreeing_headers_are_a_header_mismatch(method, params, sent):
    with pytest.raises(HeaderMismatch) as caught:
        check_standard_headers(method=method, params=params, headers=sent, version=V)
    assert (caught.value.code, caught.value.http_status) == (-32020, 400)


def test_optional_whitespace_around_values_is_ignored():
    sent = {"mcp-protocol-version": f" {V}\t", "mcp-method": "  tools/call ", "mcp-name": "  echo  "}
    check_standard_headers(method="tools/call", params={"name": "echo"}, headers=sent, version=V)


@given(st.text(min_size=1, max_size=40))
def test_any_name_survives_the_header_encoding(name: str):
    try:
        encoded = encode_header_value(name)
    except UnicodeEncodeError:
        return  # lone surrogates cannot travel in a header at all
    check_standard_headers(
        method="prompts/get", params={"name": name}, headers=headers("prompts/get", encoded), version=V
    )


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "limit": {"type": "integer", "x-mcp-header": "Limit"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "target": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
        "tags": {"type": "array", "items": {"type": "string", "x-mcp-header": "Tag"}},
        "query": {"type": "string"},
    },
}


def test_only_annotations_reachable_through_properties_count():
    assert header_annotations(SCHEMA) == [
        (("region",), "Region"),
        (("limit",), "Limit"),
        (("dry",), "Dry-Run"),
        (("target", "zone"), "Zone"),
    ]


def test_param_headers_matching_the_arguments_pass():
    arguments = {"region": "us-west1", "limit": 42, "dry": False, "target": {"zone": "b"}, "query": "x"}
    sent = {
        "mcp-param-region": "us-west1",
        "mcp-param-limit": "42.0",
        "mcp-param-dry-run": "false",
        "mcp-param-zone": "b",
    }
    check_param_headers(input_schema=SCHEMA, arguments=arguments, headers=sent)


def test_absent_and_null_arguments_need_no_header():
    check_param_headers(input_schema=SCHEMA, arguments={"region": None, "query": "x"}, headers={})


@pytest.mark.parametrize(
    ("arguments", "sent"),
    [
        ({"region": "us-west1"}, {}),  # value in the body, header omitted
        ({"region": "us-west1"}, {"mcp-param-region": "eu-west1"}),
        ({"limit": 42}, {"mcp-param-limit": "43"}),
        ({"limit": 42}, {"mcp-param-limit": "forty-two"}),
        ({"dry": True}, {"mcp-param-dry-run": "True"}),
        ({"target": {"zone": "b"}}, {"mcp-param-zone": "c"}),
        ({}, {"mcp-param-region": "us-west1"}),  # a header for an argument the body does not hold
        ({"region": "Hello"}, {"mcp-param-region": "=?base64?SGVsbG8?="}),  # bad padding
        ({"region": "Hello"}, {"mcp-param-region": "=?base64?SGVs!!!bG8=?="}),
    ],
)
def test_param_headers_that_disagree_are_a_header_mismatch(arguments, sent):
    with pytest.raises(HeaderMismatch):
        check_param_headers(input_schema=SCHEMA, arguments=arguments, headers=sent)


def test_values_without_the_full_base64_wrapper_are_literal():
    for literal in ("SGVsbG8=", "=?base64?SGVsbG8="):
        check_param_headers(input_schema=SCHEMA, arguments={"region": literal}, headers={"mcp-param-region": literal})
    check_param_headers(
        input_schema=SCHEMA, arguments={"region": "Hello"}, headers={"mcp-param-region": "=?base64?SGVsbG8=?="}
    )


@given(st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1))
def test_integers_compare_numerically(value: int):
    assert header_matches(value, str(value))
    assert header_matches(value, f"{value}.0")
    assert not header_matches(value, str(value + 1))


@given(st.text(max_size=30))
def test_string_arguments_round_trip_through_the_encoding(value: str):
    try:
        encoded = encode_header_value(value)
    except UnicodeEncodeError:
        return
    check_param_headers(input_schema=SCHEMA, arguments={"region": value}, headers={"mcp-param-region": encoded})
