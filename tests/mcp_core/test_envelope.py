"""The 2026-07-28 envelope: era selection, required ``_meta`` fields, version support and result fields."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_core.envelope import SUPPORTED_VERSIONS, complete_result, is_stateless, open_envelope
from mcp_core.errors import HeaderMismatch, InvalidParams, UnsupportedProtocolVersion

V = "2026-07-28"
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}
HEADERS = {"mcp-protocol-version": V, "mcp-method": "tools/list"}


def without(key: str) -> dict[str, Any]:
    return {k: v for k, v in META.items() if k != key}


def test_a_request_naming_its_version_in_meta_is_stateless_even_with_a_session_header():
    assert is_stateless(method="tools/list", params={"_meta": META}, has_session=True, protocol_header=None)


@pytest.mark.parametrize(
    ("method", "has_session", "header", "expected"),
    [
        ("initialize", False, None, False),
        ("tools/list", True, "2025-11-25", False),
        ("tools/list", False, "2025-06-18", False),  # a handshake client that lost its session
        ("tools/list", False, V, True),
        ("tools/list", False, None, True),  # judged, and refused, by the envelope rules
    ],
)
def test_era_of_requests_without_a_meta_version(method, has_session, header, expected):
    assert is_stateless(method=method, params={}, has_session=has_session, protocol_header=header) is expected


def test_a_valid_envelope_is_opened():
    envelope = open_envelope(method="tools/list", params={"_meta": META}, headers=HEADERS)
    assert envelope.version == V
    assert envelope.client_capabilities == {"elicitation": {}}
    assert envelope.log_level is None


def test_client_info_is_optional_and_log_level_is_read():
    meta = {**without("io.modelcontextprotocol/clientInfo"), "io.modelcontextprotocol/logLevel": "warning"}
    envelope = open_envelope(method="tools/list", params={"_meta": meta}, headers=HEADERS)
    assert (envelope.client_info, envelope.log_level) == (None, "warning")


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"_meta": "nope"},
        {"_meta": without("io.modelcontextprotocol/protocolVersion")},
        {"_meta": without("io.modelcontextprotocol/clientCapabilities")},
        {"_meta": {**META, "io.modelcontextprotocol/clientCapabilities": []}},
        {"_meta": {**META, "io.modelcontextprotocol/clientInfo": "me"}},
        {"_meta": {**META, "io.modelcontextprotocol/logLevel": "verbose"}},
    ],
)
def test_missing_or_malformed_meta_is_invalid_params_with_400(params):
    with pytest.raises(InvalidParams) as caught:
        open_envelope(method="tools/list", params=params, headers=HEADERS)
    assert caught.value.http_status == 400


def test_an_unserved_version_lists_every_served_version():
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    with pytest.raises(UnsupportedProtocolVersion) as caught:
        open_envelope(
            method="tools/list", params={"_meta": meta}, headers={**HEADERS, "mcp-protocol-version": "2099-01-01"}
        )
    assert caught.value.http_status == 400
    assert caught.value.data == {"supported": list(SUPPORTED_VERSIONS), "requested": "2099-01-01"}
    assert SUPPORTED_VERSIONS[0] == V and "2024-11-05" in SUPPORTED_VERSIONS


def test_a_handshake_version_in_meta_is_unsupported_statelessly():
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
    with pytest.raises(UnsupportedProtocolVersion):
        open_envelope(
            method="tools/list", params={"_meta": meta}, headers={**HEADERS, "mcp-protocol-version": "2025-11-25"}
        )


def test_header_disagreeing_with_the_meta_version_is_checked_before_support():
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    with pytest.raises(HeaderMismatch):
        open_envelope(method="tools/list", params={"_meta": meta}, headers=HEADERS)


def test_results_carry_result_type_and_server_info_next_to_their_own_meta():
    result = complete_result({"tools": [], "_meta": {"x.example/trace": 1}}, {"name": "srv", "version": "1"})
    assert result == {
        "resultType": "complete",
        "tools": [],
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "srv", "version": "1"}, "x.example/trace": 1},
    }
