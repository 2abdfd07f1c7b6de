"""A tool definition as a held change stores it (an upstream's wire dict, or the fields an OpenAPI operation gives
its tool): its digest, its input schema, and the parts a person compares side by side."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

JSONObject = dict[str, Any]

# (label, the key in an upstream's wire dict, the key in an OpenAPI tool's fields, shown as text or as JSON)
PARTS: tuple[tuple[str, str, str, bool], ...] = (
    ("Name", "name", "name", True),
    ("Title", "title", "title", True),
    ("Description", "description", "description", True),
    ("Input schema", "inputSchema", "input_schema", False),
    ("Output schema", "outputSchema", "output_schema", False),
    ("Annotations", "annotations", "annotations", False),
    ("Icons", "icons", "icons", False),
    ("Execution", "execution", "execution", False),
    ("Request", "config", "config", False),
)
KNOWN_KEYS = frozenset(key for _, wire, fields, _ in PARTS for key in (wire, fields))


def canonical(value: Any) -> str:
    """``value`` as canonical JSON: what "the same definition" compares."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def definition_digest(kind: str, definition: JSONObject | None) -> str:
    """The digest of one proposal: a change of ``kind`` to ``definition`` (None for a removal)."""
    return hashlib.sha256(canonical({"kind": kind, "definition": definition}).encode()).hexdigest()


def input_schema_of(definition: JSONObject | None) -> Any:
    if not definition:
        return None
    return definition.get("inputSchema", definition.get("input_schema", {"type": "object"}))


@dataclass(frozen=True)
class Part:
    """One part of a definition for the review page: text (a name, a description) or pretty JSON (a schema)."""

    label: str
    text: str
    is_json: bool


def definition_parts(definition: JSONObject | None) -> dict[str, Part]:
    """The parts of ``definition`` by label, in the order of ``PARTS`` (a part it lacks is absent); keys the page does
    not know are shown together as "Other"."""
    if not definition:
        return {}
    parts: dict[str, Part] = {}
    for label, wire, fields, as_text in PARTS:
        key = wire if wire in definition else fields
        if key not in definition or definition[key] in (None, ""):
            continue
        value = definition[key]
        text = str(value) if as_text else json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
        parts[label] = Part(label, text, not as_text)
    rest = {key: value for key, value in definition.items() if key not in KNOWN_KEYS}
    if rest:
        parts["Other"] = Part("Other", json.dumps(rest, indent=2, sort_keys=True, ensure_ascii=False), True)
    return parts
