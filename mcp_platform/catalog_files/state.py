"""A tenant's configuration as plain values, read from its rows or from a file, in the one shape both are compared
in: settings, and per section its entries by key. Which objects a file manages is recorded here too."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp_platform.catalog_files.loading import LoadedFile, Problem
from mcp_platform.catalog_files.models import ManagedObject
from mcp_platform.catalog_files.sections import SECTIONS, SETTINGS_FIELDS, Section
from tenants.models import Tenant

JSONObject = dict[str, Any]


@dataclass(frozen=True)
class Entry:
    """One object: its ``key`` in its section and its fields (every one, defaults included). ``index``: its place in
    the file's list (None when read from the database, where ``row`` is the row it was read from)."""

    key: str
    fields: JSONObject
    index: int | None = None
    row: Any = None


@dataclass
class State:
    """Settings (a file's: only those it sets) and each section's entries by key."""

    settings: JSONObject = field(default_factory=dict)
    sections: dict[str, dict[str, Entry]] = field(default_factory=lambda: {s.name: {} for s in SECTIONS})

    def entries(self, section: Section) -> dict[str, Entry]:
        return self.sections[section.name]


def state_of_tenant(tenant: Tenant) -> State:
    """What ``tenant`` holds now."""
    state = State(settings={name: getattr(tenant, name) for name in SETTINGS_FIELDS})
    for section in SECTIONS:
        entries = state.entries(section)
        for row in section.rows(tenant):
            fields = section.read(row)
            key = section.key(fields)
            entries[key] = Entry(key, fields, row=row)
    return state


def state_of_file(loaded: LoadedFile) -> tuple[State, list[Problem]]:
    """What the file (checked against the schema) asks for, and the objects it lists twice."""
    data: JSONObject = loaded.data
    state = State(settings=dict(data.get("settings") or {}))
    problems: list[Problem] = []
    for section in SECTIONS:
        entries = state.entries(section)
        for index, given in enumerate(data.get(section.name) or []):
            fields = section.desired(given)
            key = section.key(fields)
            first = entries.get(key)
            if first is not None:
                first_line = loaded.line((section.name, first.index or 0))
                problems.append(
                    loaded.problem(
                        (section.name, index),
                        f"the {section.noun} {key!r} is listed twice (first on line {first_line})",
                    )
                )
                continue
            entries[key] = Entry(key, fields, index=index)
    return state, problems


def managed_keys(tenant: Tenant) -> dict[str, set[str]]:
    """The keys of the objects a file made or took over, per section."""
    keys: dict[str, set[str]] = {section.name: set() for section in SECTIONS}
    for section_name, key in ManagedObject.objects.filter(tenant=tenant).values_list("section", "key"):
        keys.setdefault(section_name, set()).add(key)
    return keys


def managed_record(*, tenant: Tenant, keys: dict[str, Iterable[str]]) -> None:
    """Record ``keys`` as the objects the file manages now (the file's whole list: others are forgotten)."""
    wanted = {(section, key) for section, section_keys in keys.items() for key in section_keys}
    stored = dict(
        ((section, key), pk)
        for pk, section, key in ManagedObject.objects.filter(tenant=tenant).values_list("pk", "section", "key")
    )
    stale = [pk for pair, pk in stored.items() if pair not in wanted]
    if stale:
        ManagedObject.objects.filter(pk__in=stale).delete()
    ManagedObject.objects.bulk_create(
        ManagedObject(tenant=tenant, section=section, key=key) for section, key in sorted(wanted - set(stored))
    )
