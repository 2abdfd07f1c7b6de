"""Whether a tool's new input schema still accepts every call its approved one did: the rule that decides, for a
source set to withhold on incompatible schemas, which held tools are kept from clients until an admin decides.

Pure and conservative. A change is incompatible when it may refuse (or misread) a call made to the approved schema:
a property newly required, a property removed, a property's type narrowed (``integer`` to ``number`` widens, the
reverse narrows), an enum that lost a value, or any other constraint (``pattern``, ``minimum``, ``anyOf``, ``$ref``,
``additionalProperties`` ...) added or changed. Dropping a constraint, adding an optional property and changing
words (``title``, ``description``, ``examples``, ``default``) are compatible. Properties and array items are compared
the same way, level by level.
"""

from __future__ import annotations

import json
from typing import Any

# Keywords that say something to a person, never to a validator.
ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "$schema", "$id"}
)
# Keywords compared by meaning below; every other keyword is a constraint compared as a whole.
STRUCTURAL = frozenset({"type", "properties", "required", "items", "enum"})
JSON_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")


def input_schema_breaks(approved: Any, proposed: Any) -> list[str]:
    """Why calls made to the ``approved`` input schema may be refused under the ``proposed`` one, in words, one
    reason per change; empty when the proposed schema accepts them all (by the rule in this module's docstring)."""
    reasons: list[str] = []
    _compare(approved, proposed, "", reasons)
    return reasons


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _where(path: str) -> str:
    return f"'{path}'" if path else "the arguments"


def _accepts_anything(schema: Any) -> bool:
    return schema is True or (isinstance(schema, dict) and not (set(schema) - ANNOTATIONS))


def _types(schema: dict[str, Any]) -> set[str] | None:
    """The JSON types ``schema`` allows (None: any)."""
    declared = schema.get("type")
    if declared is None:
        return None
    return {declared} if isinstance(declared, str) else {t for t in declared if isinstance(t, str)}


def _covered(kind: str, allowed: set[str]) -> bool:
    return kind in allowed or (kind == "integer" and "number" in allowed)


def _compare(approved: Any, proposed: Any, path: str, reasons: list[str]) -> None:
    if _same(approved, proposed) or _accepts_anything(proposed):
        return
    if not isinstance(approved, dict) or not isinstance(proposed, dict):
        reasons.append(f"{_where(path)}: the schema changed")
        return
    old_types, new_types = _types(approved), _types(proposed)
    if new_types is not None:
        lost = sorted(
            t for t in (old_types if old_types is not None else set(JSON_TYPES)) if not _covered(t, new_types)
        )
        if lost:
            reasons.append(
                f"{_where(path)}: the type changed from {_type_words(old_types)} to {_type_words(new_types)}"
            )
    newly_required = sorted(set(_names(proposed.get("required"))) - set(_names(approved.get("required"))))
    for name in newly_required:
        reasons.append(f"'{_join(path, name)}' is now required")
    old_properties = _properties(approved)
    new_properties = _properties(proposed)
    for name, schema in old_properties.items():
        if name not in new_properties:
            reasons.append(f"'{_join(path, name)}' was removed")
        else:
            _compare(schema, new_properties[name], _join(path, name), reasons)
    if "items" in proposed:
        _compare(approved.get("items", True), proposed["items"], f"{path}[]" if path else "[]", reasons)
    if "enum" in proposed and isinstance(proposed["enum"], list):
        old_values = approved.get("enum") if isinstance(approved.get("enum"), list) else None
        if old_values is None:
            reasons.append(f"{_where(path)}: now limited to {len(proposed['enum'])} value(s)")
        else:
            lost_values = [v for v in old_values if not any(_same(v, w) for w in proposed["enum"])]
            if lost_values:
                shown = ", ".join(json.dumps(v) for v in lost_values[:5])
                reasons.append(f"{_where(path)}: no longer accepts {shown}")
    for keyword in sorted(set(proposed) - ANNOTATIONS - STRUCTURAL):
        if keyword not in approved or not _same(approved[keyword], proposed[keyword]):
            verb = "added" if keyword not in approved else "changed"
            reasons.append(f"{_where(path)}: its {keyword} was {verb}")


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    found = schema.get("properties")
    return found if isinstance(found, dict) else {}


def _names(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _type_words(types: set[str] | None) -> str:
    return "any" if types is None else " or ".join(sorted(types))
