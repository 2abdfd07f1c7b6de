"""A Python tool function's input schema, read from its signature: the parameters after the context become the
properties of a JSON Schema object (type hints to types, defaults to ``default`` and not required), so that a tool
saved without a schema of its own still tells clients what it takes."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union

JSONObject = dict[str, Any]

# The input schema a tool has when nobody wrote one (``tenants.models.default_input_schema``).
EMPTY_SCHEMA: JSONObject = {"type": "object"}

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_KEYWORDABLE = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _json_default(value: Any) -> Any:
    """``value`` when it is plain JSON, else a marker that it is not (such a default is left out)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, bool | int | float | str) for v in value):
        return list(value)
    return inspect.Parameter.empty


def type_schema(hint: Any) -> JSONObject:
    """The JSON Schema of a type hint: str, int, float, bool, list[...], dict, Literal[...], X | None; anything
    else (Any, a class) is left open ``{}``."""
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin is Literal:
        kinds = {_SCALARS.get(type(value)) for value in arguments}
        schema: JSONObject = {"enum": list(arguments)}
        if len(kinds) == 1 and None not in kinds:
            schema = {"type": kinds.pop(), **schema}
        return schema
    if origin in (Union, types.UnionType):
        options = [a for a in arguments if a is not type(None)]
        inner = type_schema(options[0]) if len(options) == 1 else {"anyOf": [type_schema(a) for a in options]}
        if len(options) < len(arguments):  # Optional: null is allowed too
            if isinstance(inner.get("type"), str):
                return {**inner, "type": [inner["type"], "null"]}
            return {"anyOf": [inner, {"type": "null"}]} if inner else {}
        return inner
    if hint in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        schema = {"type": "array"}
        if arguments and origin is not tuple and arguments[0] is not Any:
            schema["items"] = type_schema(arguments[0])
        return schema
    if hint is dict or origin is dict:
        return {"type": "object"}
    return {}


def signature_schema(function: Callable[..., Any]) -> JSONObject:
    """The input schema of ``async def fn(ctx, a: int, b: str = "x", ...)``: ``{"type": "object", "properties":
    {...}, "required": [...]}``. A function taking ``**arguments`` accepts more than it names
    (``additionalProperties`` is not set to false either way)."""
    try:
        hints = typing.get_type_hints(function)
    except (NameError, TypeError):
        hints = {}
    _, *parameters = inspect.signature(function).parameters.values()
    properties: JSONObject = {}
    required: list[str] = []
    for parameter in parameters:
        if parameter.kind not in _KEYWORDABLE:
            continue
        schema = type_schema(hints.get(parameter.name, Any))
        if parameter.default is parameter.empty:
            required.append(parameter.name)
        elif (default := _json_default(parameter.default)) is not inspect.Parameter.empty:
            schema["default"] = default
        properties[parameter.name] = schema
    result: JSONObject = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    return result


def function_signature_text(name: str, function: Callable[..., Any]) -> str:
    """``name(a: int, b: str = 'x')``, without the context parameter, as the admin shows it."""
    try:
        signature = inspect.signature(function, eval_str=True)
    except (NameError, TypeError, ValueError):
        signature = inspect.signature(function)
    _, *parameters = signature.parameters.values()
    return f"{name}({', '.join(str(p) for p in parameters)})"
