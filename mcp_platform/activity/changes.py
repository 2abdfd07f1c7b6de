"""What an admin change changed, as its page shows it: one row per field with its value before and after, and for a
bulk change (an OpenAPI import, an upstream refresh) the names it added, changed and removed. Secret values were
redacted when the change was recorded; they are redacted here again, so a row written before that rule shows none."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp_platform.observe.redaction import REDACTED, is_secret_name

# Fields whose value is a secret's whatever their name says (a secret row's own value, as the services name them).
SECRET_FIELDS = frozenset({"ciphertext", "value", "key_id"})
NOTHING = "—"
# A value longer than this (as text) is cut on the page: the page is for reading, the export keeps it whole.
SHOWN_CHARACTERS = 2000


@dataclass(frozen=True)
class FieldChange:
    field: str
    label: str
    before: str
    after: str


def _label(field: str) -> str:
    return field.replace("_", " ").strip().capitalize() or field


def _shown(field: str, value: Any) -> str:
    if value is None or value == "":
        return NOTHING
    if is_secret_name(field) or field in SECRET_FIELDS:
        return REDACTED
    text = value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS] + "…"


def _fields(side: Any) -> dict[str, Any]:
    return side if isinstance(side, dict) else {}


def field_changes(details: Any) -> list[FieldChange]:
    """The fields an admin change (``details`` as ``activity_admin_change_record`` keeps them) set, in name order:
    before → after; a creation has nothing before, a deletion nothing after."""
    if not isinstance(details, dict):
        return []
    before, after = _fields(details.get("before")), _fields(details.get("after"))
    return [
        FieldChange(name, _label(name), _shown(name, before.get(name)), _shown(name, after.get(name)))
        for name in sorted(set(before) | set(after), key=str)
    ]


@dataclass(frozen=True)
class BulkSummary:
    operation: str
    source: str
    actor: str
    added: list[str]
    changed: list[str]
    removed: list[str]


def bulk_summary(details: Any) -> BulkSummary | None:
    """A bulk change's summary (``activity_bulk_change_record``), or None for any other row."""
    if not isinstance(details, dict) or "operation" not in details:
        return None

    def names(key: str) -> list[str]:
        value = details.get(key)
        return sorted(str(name) for name in value) if isinstance(value, list) else []

    return BulkSummary(
        operation=str(details.get("operation", "")),
        source=str(details.get("source", "")),
        actor=str(details.get("actor", "")),
        added=names("added"),
        changed=names("changed"),
        removed=names("removed"),
    )
