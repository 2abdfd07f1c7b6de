"""Streamable HTTP header rules: Accept, Content-Type, session ids, Host/Origin, header values, event ids."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_core.http import (
    accepted_media_types,
    accepts,
    accepts_json_and_sse,
    decode_header_value,
    encode_header_value,
    host_allowed,
    is_json_content_type,
    origin_allowed,
    parse_last_event_id,
    split_host,
    valid_session_id,
)

# Accept


def test_accept_header_lists_its_media_types_lower_cased_without_parameters() -> None:
    accept = "Application/JSON; charset=utf-8, text/event-stream;q=0.5"
    assert accepted_media_types(accept) == frozenset({"application/json", "text/event-stream"})


def test_media_types_with_q_zero_are_not_accepted() -> None:
    accept = "application/json, text/event-stream; q=0, text/html;q=0.000"
    assert accepted_media_types(accept) == frozenset({"application/json"})


def test_malformed_accept_members_are_skipped() -> None:
    assert accepted_media_types("garbage, ,/, text/, application/json") == frozenset({"application/json"})


def test_a_bare_star_means_any_media_type() -> None:
    assert accepted_media_types("text/html, *; q=.2") == frozenset({"text/html", "*/*"})


def test_no_accept_header_lists_nothing() -> None:
    assert accepted_media_types(None) == frozenset()


def test_accepts_an_exact_media_type_case_insensitively() -> None:
    assert accepts("application/json", "Application/Json")
    assert not accepts("application/json", "text/event-stream")


def test_accepts_honours_wildcards() -> None:
    assert accepts("*/*", "text/event-stream")
    assert accepts("text/*", "text/event-stream")
    assert not accepts("text/*", "application/json")


def test_a_missing_or_blank_accept_header_accepts_anything() -> None:
    assert accepts(None, "application/json")
    assert accepts("", "text/event-stream")
    assert accepts("  ", "text/event-stream")


def test_the_most_specific_range_decides() -> None:
    assert not accepts("text/*;q=0, */*", "text/event-stream")
    assert accepts("text/*;q=0, */*", "application/json")
    assert accepts("*/*;q=0, application/json", "application/json")
    assert not accepts("*/*;q=0, application/json", "text/event-stream")


def test_post_accept_rule_needs_both_json_and_event_stream() -> None:
    assert accepts_json_and_sse("application/json, text/event-stream")
    assert accepts_json_and_sse("text/event-stream;q=0.9, application/json")
    assert not accepts_json_and_sse("application/json")
    assert not accepts_json_and_sse("text/event-stream")


def test_post_accept_rule_counts_wildcards() -> None:
    assert accepts_json_and_sse("*/*")
    assert accepts_json_and_sse("application/*, text/*")
    assert not accepts_json_and_sse("application/*")


def test_post_accept_rule_refuses_a_missing_accept_header() -> None:
    assert not accepts_json_and_sse(None)
    assert not accepts_json_and_sse("")


def test_post_accept_rule_refuses_an_excluded_type() -> None:
    assert not accepts_json_and_sse("application/json, text/event-stream;q=0")


@given(st.text())
def test_accept_parsing_never_raises_on_arbitrary_text(accept: str) -> None:
    types = accepted_media_types(accept)
    assert all(media == media.lower() for media in types)
    accepts(accept, "application/json")
    accepts_json_and_sse(accept)


# Content-Type


@pytest.mark.parametrize(
    "value", ["application/json", "Application/JSON", "application/json; charset=utf-8", " application/json "]
)
def test_json_content_types_are_recognised(value: str) -> None:
    assert is_json_content_type(value)


@pytest.mark.parametrize("value", [None, "", "text/plain", "application/ld+json", "application/jsonx"])
def test_other_content_types_are_not_json(value: str | None) -> None:
    assert not is_json_content_type(value)


# Session ids


def test_session_ids_are_one_to_128_visible_ascii_characters() -> None:
    assert valid_session_id("a")
    assert valid_session_id("!" * 128)
    assert valid_session_id("1f3a4b5c-6d7e-8f9a~{}")


@pytest.mark.parametrize("value", ["", "a" * 129, "has space", "tab\t", "é", "line\n", "\x7f"])
def test_invalid_session_ids_are_refused(value: str) -> None:
    assert not valid_session_id(value)


# Host


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("example.com", ("example.com", None)),
        ("Example.COM:8000", ("example.com", 8000)),
        ("example.com.", ("example.com", None)),
        ("127.0.0.1:80", ("127.0.0.1", 80)),
        ("[::1]", ("[::1]", None)),
        ("[::1]:8000", ("[::1]", 8000)),
        ("localhost:65535", ("localhost", 65535)),
    ],
)
def test_split_host_separates_host_and_port(header: str, expected: tuple[str, int | None]) -> None:
    assert split_host(header) == expected


@pytest.mark.parametrize(
    "header",
    ["", ":80", "example.com:", "example.com:http", "example.com:65536", "example.com:-1", "::1", "[::1",
     "[nope]:80", "[::1]x", "exa mple.com", "example.com/path", "user@example.com", "ex\u00e4mple.com"],
)  # fmt: skip
def test_split_host_refuses_malformed_hosts_and_ports(header: str) -> None:
    with pytest.raises(ValueError):
        split_host(header)


def test_an_allowed_host_matches_case_insensitively_ignoring_the_port() -> None:
    assert host_allowed("LocalHost:8000", ["localhost"])
    assert host_allowed("127.0.0.1:8000", ["localhost", "127.0.0.1"])
    assert host_allowed("[::1]:8000", ["[::1]"])
    assert host_allowed("[::1]:8000", ["::1"])


def test_a_leading_dot_allows_the_domain_and_its_subdomains() -> None:
    assert host_allowed("example.com", [".example.com"])
    assert host_allowed("api.eu.example.com:443", [".example.com"])
    assert not host_allowed("badexample.com", [".example.com"])


def test_a_star_allows_any_host() -> None:
    assert host_allowed("anything.test", ["*"])


def test_a_host_not_listed_is_refused() -> None:
    assert not host_allowed("evil.test", ["localhost", "127.0.0.1"])
    assert not host_allowed("sub.example.com", ["example.com"])


def test_a_missing_or_malformed_host_is_refused() -> None:
    assert not host_allowed(None, ["*"])
    assert not host_allowed("bad host", ["*"])
    assert not host_allowed("example.com:99999", ["example.com"])


# Origin

ALLOWED_HOSTS = ["localhost", "127.0.0.1", ".example.com"]


def origin_ok(origin: str | None, allowed_origins: list[str] | None = None) -> bool:
    return origin_allowed(origin, allowed_hosts=ALLOWED_HOSTS, allowed_origins=allowed_origins or [])


def test_requests_without_origin_are_allowed() -> None:
    assert origin_ok(None)


def test_a_null_or_unparsable_origin_is_refused() -> None:
    assert not origin_ok("null")
    assert not origin_ok("")
    assert not origin_ok("localhost")
    assert not origin_ok("http://localhost/path")
    assert not origin_ok("http://user@localhost")
    assert not origin_ok("http://localhost:notaport")


def test_an_origin_on_an_allowed_host_is_allowed_whatever_its_port() -> None:
    assert origin_ok("http://localhost:6274")
    assert origin_ok("https://LOCALHOST")
    assert origin_ok("https://app.example.com")


def test_an_origin_on_another_host_is_refused() -> None:
    assert not origin_ok("https://evil.test")
    assert not origin_ok("http://localhost.evil.test")


def test_an_exact_allowed_origin_is_allowed_with_default_ports_normalised() -> None:
    allowed = ["https://Client.Test", "http://tool.test:8080/"]
    assert origin_ok("https://client.test:443", allowed)
    assert origin_ok("HTTPS://client.test", allowed)
    assert origin_ok("http://tool.test:8080", allowed)
    assert not origin_ok("http://client.test", allowed)
    assert not origin_ok("http://tool.test", allowed)


def test_a_star_in_allowed_origins_allows_any_parsable_origin() -> None:
    assert origin_ok("https://anyone.test", ["*"])
    assert not origin_ok("null", ["*"])


def test_a_star_in_allowed_hosts_does_not_allow_every_origin() -> None:
    assert not origin_allowed("https://evil.test", allowed_hosts=["*"], allowed_origins=[])


# Header values (2026-07-28)


def test_plain_header_values_pass_through_unchanged() -> None:
    assert decode_header_value("tools/call") == "tools/call"
    assert encode_header_value("get_weather") == "get_weather"
    assert encode_header_value("Seattle, WA") == "Seattle, WA"
    assert encode_header_value("") == ""


def test_base64_header_values_decode_to_utf8_text() -> None:
    assert decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=") == "Hello, 世界"
    assert decode_header_value("=?base64?IHBhZGRlZCA=?=") == " padded "
    assert decode_header_value("=?base64??=") == ""


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ],
)
def test_unsafe_header_values_are_base64_encoded(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded


def test_tabs_and_control_characters_are_base64_encoded() -> None:
    assert encode_header_value("a\tb").startswith("=?base64?")
    assert encode_header_value("trailing\t").startswith("=?base64?")
    assert encode_header_value("del\x7f").startswith("=?base64?")


def test_a_plain_value_that_looks_encoded_is_encoded_again() -> None:
    tricky = "=?base64?abc?="
    assert encode_header_value(tricky) != tricky
    assert decode_header_value(encode_header_value(tricky)) == tricky


@pytest.mark.parametrize(
    "value",
    ["=?base64?not base64?=", "=?base64?SGVsbG8?=", "=?base64?/w==?=", "=?base64?="],
)
def test_invalid_base64_header_values_raise_value_error(value: str) -> None:
    with pytest.raises(ValueError, match="base64"):
        decode_header_value(value)


@given(st.text())
def test_header_values_round_trip_through_their_header_form(value: str) -> None:
    encoded = encode_header_value(value)
    assert all(" " <= char <= "~" for char in encoded)
    assert encoded == encoded.strip()
    assert decode_header_value(encoded) == value


# Last-Event-ID


def test_last_event_id_is_trimmed() -> None:
    assert parse_last_event_id("  abc.12 ") == "abc.12"


@pytest.mark.parametrize("value", [None, "", "   ", "a" * 257, "a b", "é", "a\x00"])
def test_unusable_last_event_ids_are_ignored(value: str | None) -> None:
    assert parse_last_event_id(value) is None


def test_a_256_character_last_event_id_is_kept() -> None:
    assert parse_last_event_id("a" * 256) == "a" * 256
