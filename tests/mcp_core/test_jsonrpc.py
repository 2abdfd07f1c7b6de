"""JSON-RPC 2.0 codec: structural rules, batches, encoding, and decode/encode properties."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_core.errors import InvalidRequest, McpError, ParseError
from mcp_core.jsonrpc import (
    ErrorResponse,
    Invalid,
    MalformedMessage,
    Message,
    Notification,
    Request,
    Response,
    decode,
    encode,
    encode_batch,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
    request_id_of,
)


def decode_one(obj: Any) -> Message | Invalid:
    messages, is_batch = decode(orjson.dumps(obj), allow_batch=False)
    assert not is_batch
    assert len(messages) == 1
    return messages[0]


def rejection(obj: Any) -> MalformedMessage:
    with pytest.raises(MalformedMessage) as caught:
        decode(orjson.dumps(obj), allow_batch=False)
    return caught.value


# Decoding single messages


def test_a_request_with_params_decodes_to_a_request() -> None:
    message = decode_one({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"cursor": "x"}})
    assert message == Request(7, "tools/list", {"cursor": "x"})


def test_a_request_without_params_has_none_params() -> None:
    assert decode_one({"jsonrpc": "2.0", "id": "a", "method": "ping"}) == Request("a", "ping", None)


def test_a_message_without_id_is_a_notification() -> None:
    message = decode_one({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert message == Notification("notifications/initialized", None)


def test_a_result_decodes_to_a_response() -> None:
    assert decode_one({"jsonrpc": "2.0", "id": 1, "result": {}}) == Response(1, {})


def test_an_error_response_may_have_a_null_id() -> None:
    error = {"code": -32700, "message": "Parse error"}
    assert decode_one({"jsonrpc": "2.0", "id": None, "error": error}) == ErrorResponse(None, error)


def test_an_error_response_keeps_its_data() -> None:
    error = {"code": -32602, "message": "bad", "data": {"why": 1}}
    assert decode_one({"jsonrpc": "2.0", "id": "r1", "error": error}) == ErrorResponse("r1", error)


def test_unknown_members_are_ignored() -> None:
    message = decode_one({"jsonrpc": "2.0", "id": 1, "method": "ping", "extra": True})
    assert message == Request(1, "ping", None)


def test_non_ascii_text_survives_decoding() -> None:
    message = decode_one({"jsonrpc": "2.0", "id": "é", "method": "tools/call", "params": {"name": "日本"}})
    assert message == Request("é", "tools/call", {"name": "日本"})


def test_a_body_that_is_not_utf8_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        decode(b'{"jsonrpc": "2.0", "id": 1, "method": "\xff"}', allow_batch=False)


def test_a_body_that_is_not_json_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        decode(b'{"jsonrpc": "2.0",', allow_batch=True)


def test_an_empty_body_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        decode(b"", allow_batch=False)


@pytest.mark.parametrize("body", [b"1", b'"ping"', b"null", b"true"])
def test_a_json_scalar_is_an_invalid_request(body: bytes) -> None:
    with pytest.raises(InvalidRequest):
        decode(body, allow_batch=True)


@pytest.mark.parametrize("version", ["1.0", 2.0, None, "2.0 "])
def test_jsonrpc_member_must_be_exactly_2_0(version: Any) -> None:
    assert rejection({"jsonrpc": version, "id": 1, "method": "ping"}).request_id == 1


def test_a_missing_jsonrpc_member_is_rejected() -> None:
    assert rejection({"id": "x", "method": "ping"}).request_id == "x"


@pytest.mark.parametrize("bad_id", [True, False, 1.5, 1.0, None, [1], {"a": 1}])
def test_request_ids_are_strings_or_integers_only(bad_id: Any) -> None:
    error = rejection({"jsonrpc": "2.0", "id": bad_id, "method": "ping"})
    assert error.request_id is None


@pytest.mark.parametrize("method", ["", 1, None, ["ping"]])
def test_method_must_be_a_non_empty_string(method: Any) -> None:
    assert rejection({"jsonrpc": "2.0", "id": 3, "method": method}).request_id == 3


@pytest.mark.parametrize("params", [[1, 2], None, "x", 3])
def test_params_must_be_an_object_when_present(params: Any) -> None:
    rejection({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})


def test_a_request_cannot_also_carry_a_result() -> None:
    rejection({"jsonrpc": "2.0", "id": 1, "method": "ping", "result": {}})


def test_a_response_with_both_result_and_error_is_rejected() -> None:
    error = rejection({"jsonrpc": "2.0", "id": 4, "result": {}, "error": {"code": 1, "message": "m"}})
    assert error.request_id == 4


def test_a_message_with_neither_method_nor_result_nor_error_is_rejected() -> None:
    rejection({"jsonrpc": "2.0", "id": 1})


def test_a_response_must_carry_an_id() -> None:
    rejection({"jsonrpc": "2.0", "result": {}})
    rejection({"jsonrpc": "2.0", "error": {"code": 1, "message": "m"}})


def test_a_result_response_cannot_have_a_null_id() -> None:
    rejection({"jsonrpc": "2.0", "id": None, "result": {}})


@pytest.mark.parametrize("result", [[], "ok", 1, None])
def test_a_result_must_be_an_object(result: Any) -> None:
    rejection({"jsonrpc": "2.0", "id": 1, "result": result})


@pytest.mark.parametrize(
    "error",
    [
        "boom",
        {"message": "no code"},
        {"code": "1", "message": "string code"},
        {"code": True, "message": "bool code"},
        {"code": 1.5, "message": "float code"},
        {"code": -32000},
        {"code": -32000, "message": 5},
    ],
)
def test_an_error_must_be_an_object_with_integer_code_and_string_message(error: Any) -> None:
    rejection({"jsonrpc": "2.0", "id": 1, "error": error})


def test_an_error_response_id_cannot_be_a_float() -> None:
    rejection({"jsonrpc": "2.0", "id": 1.5, "error": {"code": 1, "message": "m"}})


def test_a_malformed_message_is_an_invalid_request_error() -> None:
    error = rejection({"jsonrpc": "2.0", "id": 1, "method": ""})
    assert isinstance(error, InvalidRequest)
    assert error.code == -32600


def test_request_id_of_returns_only_valid_ids() -> None:
    assert request_id_of({"id": 5}) == 5
    assert request_id_of({"id": "x"}) == "x"
    assert request_id_of({"id": True}) is None
    assert request_id_of({"id": 2.0}) is None
    assert request_id_of({}) is None
    assert request_id_of([{"id": 1}]) is None


# Batches


def test_an_array_is_refused_when_batches_are_not_allowed() -> None:
    body = orjson.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    with pytest.raises(InvalidRequest, match="batches are not supported by this protocol version"):
        decode(body, allow_batch=False)


def test_an_empty_batch_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequest):
        decode(b"[]", allow_batch=True)


def test_a_batch_decodes_each_member_and_reports_that_it_was_a_batch() -> None:
    body = orjson.dumps(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ]
    )
    messages, is_batch = decode(body, allow_batch=True)
    assert is_batch
    assert messages == [Request(1, "tools/list", None), Notification("notifications/initialized", None)]


def test_bad_batch_members_become_invalid_entries_in_place() -> None:
    body = orjson.dumps(
        [
            {"jsonrpc": "2.0", "id": "a", "method": ""},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            17,
            {"jsonrpc": "1.0", "id": True, "method": "ping"},
        ]
    )
    messages, is_batch = decode(body, allow_batch=True)
    assert is_batch
    first, second, third, fourth = messages
    assert isinstance(first, Invalid)
    assert first.id == "a"
    assert isinstance(first.error, InvalidRequest)
    assert second == Request(2, "ping", None)
    assert isinstance(third, Invalid)
    assert third.id is None
    assert isinstance(fourth, Invalid)
    assert fourth.id is None


def test_a_single_message_is_not_reported_as_a_batch_even_when_batches_are_allowed() -> None:
    messages, is_batch = decode(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', allow_batch=True)
    assert not is_batch
    assert messages == [Request(1, "ping", None)]


# Encoding


def test_encoded_result_is_compact() -> None:
    assert encode_result(1, {}) == b'{"jsonrpc":"2.0","id":1,"result":{}}'


def test_encoding_keeps_non_ascii_as_utf8() -> None:
    assert encode_result("é", {"text": "日本"}) == '{"jsonrpc":"2.0","id":"é","result":{"text":"日本"}}'.encode()


def test_encoded_request_leaves_out_absent_params() -> None:
    assert encode_request(1, "ping", None) == b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    assert orjson.loads(encode_request(1, "tools/list", {"cursor": "c"}))["params"] == {"cursor": "c"}


def test_encoded_notification_has_no_id() -> None:
    decoded = orjson.loads(encode_notification("notifications/progress", {"progress": 1}))
    assert decoded == {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    assert orjson.loads(encode_notification("x", None)) == {"jsonrpc": "2.0", "method": "x"}


def test_encoded_error_may_carry_a_null_id() -> None:
    encoded = encode_error(None, {"code": -32700, "message": "Parse error"})
    assert encoded == b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'


def test_encode_dispatches_on_the_message_type() -> None:
    assert encode(Response(1, {})) == encode_result(1, {})
    assert encode(ErrorResponse(2, {"code": 1, "message": "m"})) == encode_error(2, {"code": 1, "message": "m"})
    assert encode(Request(3, "ping", None)) == encode_request(3, "ping", None)
    assert encode(Notification("n", {"a": 1})) == encode_notification("n", {"a": 1})


def test_encoding_an_unserialisable_value_raises_type_error() -> None:
    with pytest.raises(TypeError):
        encode_result(1, {"when": object()})


def test_encode_batch_joins_encoded_messages_into_an_array() -> None:
    batch = encode_batch([encode_result(1, {}), encode_result(2, {"a": 1})])
    assert orjson.loads(batch) == [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 2, "result": {"a": 1}},
    ]


def test_encode_batch_refuses_an_empty_batch() -> None:
    with pytest.raises(ValueError, match="at least one"):
        encode_batch([])


# Properties

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=5)


def error_object(code: int, message: str, data: Any) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return error


error_objects = st.builds(error_object, st.integers(min_value=-(2**31), max_value=2**31), st.text(), json_values)
ids = st.text() | st.integers(min_value=-(2**63), max_value=2**63 - 1)
methods = st.text(min_size=1)
messages = st.one_of(
    st.builds(Request, ids, methods, st.none() | json_objects),
    st.builds(Notification, methods, st.none() | json_objects),
    st.builds(Response, ids, json_objects),
    st.builds(ErrorResponse, st.none() | ids, error_objects),
)
envelope_keys = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"])
near_values = st.one_of(
    st.just("2.0"),
    json_scalars,
    st.lists(json_scalars, max_size=2),
    st.dictionaries(st.sampled_from(["code", "message", "data"]), json_scalars, max_size=3),
)
near_messages = st.dictionaries(envelope_keys, near_values, max_size=6)


@given(st.binary())
def test_decoding_arbitrary_bytes_raises_only_protocol_errors(body: bytes) -> None:
    try:
        decoded, _ = decode(body, allow_batch=True)
    except McpError:
        return
    assert decoded


@given(near_messages | st.lists(near_messages, max_size=3), st.booleans())
def test_decoding_any_near_message_raises_only_protocol_errors(obj: Any, allow_batch: bool) -> None:
    try:
        decoded, _ = decode(orjson.dumps(obj), allow_batch=allow_batch)
    except McpError:
        return
    assert all(isinstance(m, Request | Notification | Response | ErrorResponse | Invalid) for m in decoded)


@given(messages)
def test_encoded_messages_decode_to_themselves(message: Message) -> None:
    assert decode(encode(message), allow_batch=False) == ([message], False)


@given(st.lists(messages, min_size=1, max_size=5))
def test_encoded_batches_decode_to_their_messages(batch: list[Message]) -> None:
    body = encode_batch(encode(message) for message in batch)
    assert decode(body, allow_batch=True) == (batch, True)
