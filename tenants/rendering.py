"""Placeholder substitution: ``{{argument}}`` in prompt messages and ``{variable}`` in static template text.

Both substitute in a single pass, so a value that itself contains a placeholder is never expanded again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

JSONObject = dict[str, Any]

PROMPT_PLACEHOLDER = re.compile(r"\{\{([A-Za-z0-9_.\-]+)\}\}")


def prompt_placeholders(value: Any) -> set[str]:
    """Every ``{{name}}`` placeholder found in the strings anywhere inside ``value``."""
    if isinstance(value, str):
        return set(PROMPT_PLACEHOLDER.findall(value))
    if isinstance(value, dict):
        return set().union(*(prompt_placeholders(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(prompt_placeholders(v) for v in value))
    return set()


def _substitute(value: Any, names: frozenset[str], arguments: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        # A declared argument the client left out renders as empty text, never as the raw placeholder.
        return PROMPT_PLACEHOLDER.sub(
            lambda m: str(arguments.get(m[1], "")) if m[1] in names else m[0],
            value,
        )
    if isinstance(value, dict):
        return {key: _substitute(item, names, arguments) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item, names, arguments) for item in value]
    return value


def prompt_render(
    messages: list[JSONObject], arguments: Mapping[str, str], *, argument_names: Iterable[str]
) -> list[JSONObject]:
    """The prompt's messages with ``{{name}}`` replaced by each declared argument's value.

    Only string values inside each message's ``content`` change; the stored messages are not mutated.
    """
    names = frozenset(argument_names)
    return [{**message, "content": _substitute(message.get("content"), names, arguments)} for message in messages]


def template_text_render(text: str, variables: Mapping[str, str]) -> str:
    """``text`` with each ``{variable}`` naming a template variable replaced by its value.

    Braces that do not name a variable (JSON objects, for one) are left alone.
    """
    if not variables:
        return text
    pattern = re.compile("\\{(" + "|".join(re.escape(name) for name in variables) + ")\\}")
    return pattern.sub(lambda m: variables[m[1]], text)
