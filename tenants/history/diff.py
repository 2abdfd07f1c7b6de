"""What differs between two sets of a row's values, field by field, as people read it: a short value as it is, a long
text or a JSON value (a schema, a config) as its lines (JSON pretty-printed with sorted keys) with those taken out and
put in marked. Pure: the values come in, the rows the pages show go out."""

from __future__ import annotations

import datetime as dt
import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Unchanged lines kept around each change in a long value.
CONTEXT_LINES = 3


@dataclass(frozen=True)
class DiffLine:
    """One line of a long value's diff: ``kind`` is ``removed`` (only in the first), ``added`` (only in the
    second), ``same``, or ``gap`` (unchanged lines left out)."""

    kind: str
    text: str

    @property
    def sign(self) -> str:
        return {"removed": "\u2212", "added": "+", "gap": "\u22ef"}.get(self.kind, " ")  # minus sign, ellipsis


@dataclass(frozen=True)
class FieldDiff:
    """One field: its values as text in the first and the second set, and for long values their lines' diff."""

    name: str
    label: str
    first: str
    second: str
    changed: bool
    lines: tuple[DiffLine, ...] = ()


def same(a: Any, b: Any) -> bool:
    """Whether two stored values are the same JSON value (1 and True are not; key order does not matter)."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def shown(value: Any) -> str:
    """A value as text: nothing for None, JSON pretty-printed, dates in ISO 8601, the rest as it is."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return str(value)


def _lines(first: str, second: str) -> tuple[DiffLine, ...]:
    diffed: list[DiffLine] = []
    for line in difflib.unified_diff(first.splitlines(), second.splitlines(), n=CONTEXT_LINES, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            if diffed:
                diffed.append(DiffLine("gap", ""))
            continue
        kind = {"-": "removed", "+": "added"}.get(line[:1], "same")
        diffed.append(DiffLine(kind, line[1:]))
    return tuple(diffed)


def field_diffs(
    fields: Sequence[tuple[str, str]], first: Mapping[str, Any], second: Mapping[str, Any]
) -> list[FieldDiff]:
    """Each of ``fields`` (name, label) in ``first`` and ``second``; a field missing from one is None there."""
    diffs = []
    for name, label in fields:
        a, b = first.get(name), second.get(name)
        text_a, text_b = shown(a), shown(b)
        changed = not same(a, b)
        long = "\n" in text_a or "\n" in text_b
        lines = _lines(text_a, text_b) if changed and long else ()
        diffs.append(FieldDiff(name, label, text_a, text_b, changed, lines))
    return diffs


def changed_fields(fields: Sequence[str], first: Mapping[str, Any], second: Mapping[str, Any]) -> list[str]:
    """The names of ``fields`` whose values differ between ``first`` and ``second``."""
    return [name for name in fields if not same(first.get(name), second.get(name))]
