"""Content items, tool results and prompt messages: what a function's return value becomes on the wire."""

from __future__ import annotations

import json
from typing import Any

from mcp_core.versions import V2025_03_26, V2025_06_18, at_least

JSONObject = dict[str, Any]

CONTENT_TYPES: frozenset[str] = frozenset({"text", "image", "audio", "resource", "resource_link"})
ROLES: tuple[str, ...] = ("user", "assistant")


def text(value: str) -> JSONObject:
    return {"type": "text", "text": value}


def tool_result(value: Any) -> JSONObject:
    """Normalise what a tool returned into a ``CallToolResult``.

    - a ``str`` becomes one text item;
    - a dict with ``content`` is taken as a result already (``isError``/``structuredContent`` kept);
    - a dict with a ``type`` is one content item; a list is a list of content items;
    - any other JSON value becomes ``structuredContent`` (objects) with the same JSON as text.
    """
    if isinstance(value, str):
        return {"content": [text(value)]}
    if isinstance(value, dict) and "content" in value:
        return value
    if isinstance(value, dict) and value.get("type") in CONTENT_TYPES:
        return {"content": [value]}
    if isinstance(value, list) and all(isinstance(i, dict) and i.get("type") in CONTENT_TYPES for i in value):
        return {"content": list(value)}
    encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    result: JSONObject = {"content": [text(encoded)]}
    if isinstance(value, dict):
        result["structuredContent"] = value
    return result


def error_result(message: str) -> JSONObject:
    """A ``tools/call`` result reporting a failure the model can read and react to."""
    return {"content": [text(message)], "isError": True}


def validate_content_item(item: Any) -> str | None:
    """A reason the item is not valid content, or None."""
    if not isinstance(item, dict):
        return "content item must be an object"
    kind = item.get("type")
    if kind == "text":
        return None if isinstance(item.get("text"), str) else "text content needs a string 'text'"
    if kind in ("image", "audio"):
        if not isinstance(item.get("data"), str) or not isinstance(item.get("mimeType"), str):
            return f"{kind} content needs base64 'data' and 'mimeType'"
        return None
    if kind == "resource":
        resource = item.get("resource")
        if not isinstance(resource, dict) or not isinstance(resource.get("uri"), str):
            return "resource content needs 'resource' with a 'uri'"
        if not isinstance(resource.get("text"), str) and not isinstance(resource.get("blob"), str):
            return "embedded resource needs 'text' or 'blob'"
        return None
    if kind == "resource_link":
        if not isinstance(item.get("uri"), str) or not isinstance(item.get("name"), str):
            return "resource_link needs 'uri' and 'name'"
        return None
    return f"unknown content type {kind!r}"


def prompt_message_problem(message: Any, where: str = "message") -> str | None:
    """Why ``message`` (called ``where``) is not a ``PromptMessage`` of ``role`` and one content item, or None."""
    if not isinstance(message, dict) or set(message) != {"role", "content"}:
        return f"{where} must be an object with exactly 'role' and 'content'"
    if message["role"] not in ROLES:
        return f'{where}.role must be "user" or "assistant"'
    reason = validate_content_item(message["content"])
    return None if reason is None else f"{where}.content: {reason}"


def prompt_result(value: Any) -> JSONObject:
    """Normalise what a prompt function returned into ``{messages, description?}`` (a ``GetPromptResult``).

    - a ``str`` becomes one user message with that text;
    - a dict with ``messages`` is a result already (``description`` kept when it is a string);
    - a list is the list of messages.

    Raises TypeError saying what is wrong with any other value or with a malformed message.
    """
    description: Any = None
    if isinstance(value, str):
        messages: Any = [{"role": "user", "content": text(value)}]
    elif isinstance(value, dict) and "messages" in value:
        messages, description = value["messages"], value.get("description")
        unknown = sorted(set(value) - {"messages", "description"})
        if unknown:
            raise TypeError(f"a prompt result has only 'messages' and 'description', not {unknown}")
        if description is not None and not isinstance(description, str):
            raise TypeError("a prompt result's description must be a string")
    else:
        messages = value
    if not isinstance(messages, list) or not messages:
        raise TypeError("a prompt must return a string, a non-empty list of messages, or {messages, description?}")
    for index, message in enumerate(messages):
        problem = prompt_message_problem(message, f"messages[{index}]")
        if problem is not None:
            raise TypeError(problem)
    result: JSONObject = {"messages": list(messages)}
    if description:
        result["description"] = description
    return result


def content_for_version(item: JSONObject, version: str) -> JSONObject:
    """Adapt one content item to what a revision knows: older clients get text stand-ins, not unknown types."""
    kind = item.get("type")
    if kind == "audio" and not at_least(version, V2025_03_26):
        return text(f"[audio content ({item.get('mimeType')}) not supported by protocol {version}]")
    if kind == "resource_link" and not at_least(version, V2025_06_18):
        return text(f"Resource: {item.get('name')} <{item.get('uri')}>")
    return item


def result_for_version(result: JSONObject, version: str) -> JSONObject:
    """A ``CallToolResult`` without what ``version`` predates (``structuredContent`` before 2025-06-18)."""
    content = [content_for_version(i, version) for i in result.get("content", [])]
    adapted = {**result, "content": content}
    if not at_least(version, V2025_06_18):
        adapted.pop("structuredContent", None)
    return adapted
