"""2026-07-28 HTTP headers that mirror the body: ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, and
the ``Mcp-Param-*`` headers of tool parameters marked ``x-mcp-header``. Every disagreement is HeaderMismatch.

Header names are looked up lower-cased; values are case-sensitive and compared after trimming optional
whitespace (RFC 9110 §5.5) and undoing the ``=?base64?…?=`` form where the spec allows it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from mcp_core.errors import HeaderMismatch
from mcp_core.http import decode_header_value

JSONObject = dict[str, Any]
Headers = Mapping[str, str]

# The body member each name-bearing method mirrors into Mcp-Name (the tasks extension adds its methods).
NAME_SOURCES: dict[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
# Nested ``properties`` deeper than this are not searched for annotations (a schema is admin input).
_MAX_SCHEMA_DEPTH = 32
# Visible ASCII, space and tab: what a header value may hold.
_HEADER_TEXT = re.compile(r"[\t -~]*")


def header_text(headers: Headers, name: str) -> str | None:
    """The trimmed value of header ``name`` (lower-case), or None when absent.

    Raises HeaderMismatch when the value holds characters outside visible ASCII, space and tab.
    """
    value = headers.get(name)
    if value is None:
        return None
    value = value.strip(" \t")
    if _HEADER_TEXT.fullmatch(value) is None:
        raise HeaderMismatch(f"Header {name} holds characters no header value may hold")
    return value


def _decoded(name: str, value: str) -> str:
    try:
        return decode_header_value(value)
    except ValueError:
        raise HeaderMismatch(f"Header {name} is not valid base64-encoded UTF-8") from None


def check_standard_headers(*, method: str, params: JSONObject, headers: Headers, version: str) -> None:
    """``MCP-Protocol-Version`` equals the ``_meta`` version, ``Mcp-Method`` the method, and ``Mcp-Name`` the
    name or uri of ``tools/call``, ``prompts/get`` and ``resources/read``. Raises HeaderMismatch."""
    protocol = header_text(headers, "mcp-protocol-version")
    if protocol is None:
        raise HeaderMismatch("Missing MCP-Protocol-Version header")
    if protocol != version:
        raise HeaderMismatch(
            f"Header mismatch: MCP-Protocol-Version {protocol!r} does not match the request's protocol version"
            f" {version!r}"
        )
    mcp_method = header_text(headers, "mcp-method")
    if mcp_method is None:
        raise HeaderMismatch("Missing Mcp-Method header")
    if mcp_method != method:
        raise HeaderMismatch(f"Header mismatch: Mcp-Method {mcp_method!r} does not match body method {method!r}")
    source = NAME_SOURCES.get(method)
    if source is None:
        return
    mcp_name = header_text(headers, "mcp-name")
    if mcp_name is None:
        raise HeaderMismatch(f"Missing Mcp-Name header (required for {method})")
    body_value = params.get(source)
    if not isinstance(body_value, str) or _decoded("mcp-name", mcp_name) != body_value:
        raise HeaderMismatch(f"Header mismatch: Mcp-Name does not match body params.{source}")


def header_annotations(schema: Any) -> list[tuple[tuple[str, ...], str]]:
    """``(property path, header name)`` of every ``x-mcp-header`` reachable from the root by ``properties`` alone.

    Annotations under ``items``, composition keywords or ``$ref`` are not reachable this way and are ignored.
    """
    found: list[tuple[tuple[str, ...], str]] = []
    _walk_annotations(schema, (), found)
    return found


# Module level, not nested in ``header_annotations``: a recursive inner function refers to itself through its
# closure, a reference cycle left to the garbage collector on every call.
def _walk_annotations(node: Any, path: tuple[str, ...], found: list[tuple[tuple[str, ...], str]]) -> None:
    properties = node.get("properties") if isinstance(node, dict) else None
    if not isinstance(properties, dict) or len(path) >= _MAX_SCHEMA_DEPTH:
        return
    for key, sub in properties.items():
        if not isinstance(sub, dict):
            continue
        header = sub.get("x-mcp-header")
        if isinstance(header, str) and header:
            found.append(((*path, key), header))
        _walk_annotations(sub, (*path, key), found)


def _value_at(arguments: JSONObject, path: tuple[str, ...]) -> Any:
    node: Any = arguments
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _number(text: str) -> Decimal | None:
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def header_matches(value: Any, text: str) -> bool:
    """Whether a decoded header text stands for the body value: strings exactly, booleans as ``true``/``false``,
    numbers numerically (``42.0`` equals ``42``)."""
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, (int, float)):
        number = _number(text)
        return number is not None and number == Decimal(str(value))
    if isinstance(value, str):
        return text == value
    return False


def check_param_headers(*, input_schema: Any, arguments: JSONObject, headers: Headers) -> None:
    """Every annotated argument present in the body has its ``Mcp-Param-{Name}`` header, with the same value,
    and no such header is sent for an argument that is absent or null. Raises HeaderMismatch."""
    for path, header in header_annotations(input_schema):
        name = f"mcp-param-{header.lower()}"
        text = header_text(headers, name)
        value = _value_at(arguments, path)
        where = ".".join(path)
        if value is None:
            if text is not None:
                raise HeaderMismatch(f"Header mismatch: Mcp-Param-{header} sent but arguments hold no {where}")
            continue
        if text is None:
            raise HeaderMismatch(f"Missing Mcp-Param-{header} header for argument {where}")
        if not header_matches(value, _decoded(name, text)):
            raise HeaderMismatch(f"Header mismatch: Mcp-Param-{header} does not match argument {where}")
