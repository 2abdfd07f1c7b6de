"""JSON-RPC 2.0 codec: bytes to typed messages and back, with the structural rules MCP relies on.

Decoding is one ``orjson.loads`` plus dict look-ups; everything above the envelope (methods, params) is
someone else's business.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeGuard

import orjson

from mcp_core.errors import InvalidRequest, McpError, ParseError

RequestId: TypeAlias = str | int
JSONObject: TypeAlias = dict[str, Any]

_VERSION = "2.0"


@dataclass(frozen=True, slots=True)
class Request:
    id: RequestId
    method: str
    params: JSONObject | None


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: JSONObject | None


@dataclass(frozen=True, slots=True)
class Response:
    id: RequestId
    result: JSONObject


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    id: RequestId | None
    error: JSONObject


@dataclass(frozen=True, slots=True)
class Invalid:
    """One structurally bad member of a batch; ``id`` is its id when that id was itself valid."""

    id: RequestId | None
    error: McpError


Message: TypeAlias = Request | Notification | Response | ErrorResponse


class MalformedMessage(InvalidRequest):
    """An ``InvalidRequest`` raised by :func:`decode` that remembers the offending message's id.

    ``request_id`` is the id when the message carried a valid one (so the error response can echo it),
    else None and the error response goes out with ``"id": null``.
    """

    def __init__(self, message: str, *, request_id: RequestId | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


def _is_id(value: object) -> TypeGuard[RequestId]:
    # bool is an int subclass, and True is no more an id than 1.0 is.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def request_id_of(obj: object) -> RequestId | None:
    """The ``id`` member of a decoded JSON value when it is a valid request id, else None."""
    if isinstance(obj, dict):
        value = obj.get("id")
        if _is_id(value):
            return value
    return None


def _interpret(obj: object) -> str | Message:
    """The message ``obj`` encodes, or a sentence saying why it is not one."""
    if not isinstance(obj, dict):
        return "a JSON-RPC message must be a JSON object"
    if obj.get("jsonrpc") != _VERSION:
        return 'the "jsonrpc" member must be exactly "2.0"'
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str) or not method:
            return 'the "method" member must be a non-empty string'
        if "result" in obj or "error" in obj:
            return 'a request cannot carry "result" or "error"'
        params = obj.get("params")
        if "params" in obj and not isinstance(params, dict):
            return 'the "params" member must be a JSON object when present'
        if "id" not in obj:
            return Notification(method, params)
        if not _is_id(obj["id"]):
            return 'a request "id" must be a string or an integer'
        return Request(obj["id"], method, params)
    has_result = "result" in obj
    has_error = "error" in obj
    if has_result == has_error:
        return 'a message needs "method", or exactly one of "result" and "error"'
    if "id" not in obj:
        return 'a response must carry the "id" of its request'
    message_id = obj["id"]
    if has_result:
        if not _is_id(message_id):
            return 'a result response "id" must be a string or an integer'
        result = obj["result"]
        if not isinstance(result, dict):
            return 'the "result" member must be a JSON object'
        return Response(message_id, result)
    if message_id is not None and not _is_id(message_id):
        return 'an error response "id" must be a string, an integer or null'
    error = obj["error"]
    if not isinstance(error, dict):
        return 'the "error" member must be a JSON object'
    code = error.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        return 'the error "code" must be an integer'
    if not isinstance(error.get("message"), str):
        return 'the error "message" must be a string'
    return ErrorResponse(message_id, error)


def decode(body: bytes, *, allow_batch: bool) -> tuple[list[Message | Invalid], bool]:
    """Decode a POST body into its messages; the bool says whether the body was a batch array.

    A single message comes back as a one-element list. In a batch, each bad member becomes an
    ``Invalid`` entry in place so the caller can answer it, and good members are decoded as usual.

    Raises ``ParseError`` when the body is not UTF-8 JSON, and ``MalformedMessage`` (an
    ``InvalidRequest``) for a single structurally invalid message, an array when ``allow_batch`` is
    False, or an empty array.
    """
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ParseError("Parse error: the body is not valid UTF-8 JSON") from None
    if isinstance(obj, list):
        if not allow_batch:
            raise MalformedMessage("batches are not supported by this protocol version")
        if not obj:
            raise MalformedMessage("an empty batch is not a valid request")
        messages: list[Message | Invalid] = []
        for member in obj:
            decoded = _interpret(member)
            if isinstance(decoded, str):
                messages.append(Invalid(request_id_of(member), InvalidRequest(decoded)))
            else:
                messages.append(decoded)
        return messages, True
    decoded = _interpret(obj)
    if isinstance(decoded, str):
        raise MalformedMessage(decoded, request_id=request_id_of(obj))
    return [decoded], False


def _dumps(obj: JSONObject) -> bytes:
    # orjson writes compact UTF-8 and keeps non-ASCII characters as they are.
    return orjson.dumps(obj)


def encode_request(id: RequestId, method: str, params: JSONObject | None) -> bytes:
    """A request; ``params`` None leaves the member out. Raises TypeError for unserialisable params."""
    obj: JSONObject = {"jsonrpc": _VERSION, "id": id, "method": method}
    if params is not None:
        obj["params"] = params
    return _dumps(obj)


def encode_notification(method: str, params: JSONObject | None) -> bytes:
    """A notification; ``params`` None leaves the member out. Raises TypeError for unserialisable params."""
    obj: JSONObject = {"jsonrpc": _VERSION, "method": method}
    if params is not None:
        obj["params"] = params
    return _dumps(obj)


def encode_result(id: RequestId, result: JSONObject) -> bytes:
    """A success response. Raises TypeError for an unserialisable result."""
    return _dumps({"jsonrpc": _VERSION, "id": id, "result": result})


def encode_error(id: RequestId | None, error: JSONObject) -> bytes:
    """An error response; ``id`` None when the request's id could not be read. Raises TypeError as above."""
    return _dumps({"jsonrpc": _VERSION, "id": id, "error": error})


def encode(message: Message) -> bytes:
    """Any message. Raises TypeError when its params, result or error hold unserialisable values."""
    if isinstance(message, Request):
        return encode_request(message.id, message.method, message.params)
    if isinstance(message, Notification):
        return encode_notification(message.method, message.params)
    if isinstance(message, Response):
        return encode_result(message.id, message.result)
    return encode_error(message.id, message.error)


def encode_batch(encoded: Iterable[bytes]) -> bytes:
    """Join already-encoded messages into a batch array.

    Raises ValueError when there is nothing to send: an empty array is not a valid batch, and a batch
    of notifications only gets no body at all.
    """
    parts = list(encoded)
    if not parts:
        raise ValueError("a batch needs at least one message")
    return b"[" + b",".join(parts) + b"]"
