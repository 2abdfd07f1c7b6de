"""What applying a file to a tenant would change, before anything changes: per object, added, changed (each field
before and after), taken over (a hand-made object the file names: it manages it from then on) or removed (an object
the file made and no longer lists). Objects the file never named are not in the plan: it leaves them alone.

The plan has a digest: the admin's Apply button carries the digest of the plan the person read, and the apply
refuses when the plan it computes again differs (the tenant or the file changed meanwhile).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_platform.catalog_files.checks import (
    Unchecked,
    document_problems,
    imported_name_problems,
    name_problems,
    reference_problems,
    secret_problems,
    written_problems,
)
from mcp_platform.catalog_files.loading import ConfigFileError, LoadedFile, config_load
from mcp_platform.catalog_files.schema import schema_problems
from mcp_platform.catalog_files.sections import OPENAPI_SOURCES, SECTIONS, SECTIONS_BY_NAME, UPSTREAMS, canonical, same
from mcp_platform.catalog_files.state import Entry, State, managed_keys, state_of_file, state_of_tenant
from tenants.models import Tenant

Action = Literal["add", "change", "adopt", "remove"]
ACTION_MARKS = {"add": "+", "change": "~", "adopt": "=", "remove": "-"}
SHOWN_CHARACTERS = 72


def shown(value: Any) -> str:
    """A value as a plan line shows it: JSON, cut short."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 1] + "…"


@dataclass(frozen=True)
class FieldChange:
    field: str
    before: Any
    after: Any

    def __str__(self) -> str:
        return f"{self.field}: {shown(self.before)} → {shown(self.after)}"


@dataclass(frozen=True)
class Change:
    """One object's change. ``section`` is the file's section (``settings`` for the tenant's own settings)."""

    section: str
    key: str
    action: Action
    fields: tuple[FieldChange, ...] = ()
    note: str = ""

    @property
    def noun(self) -> str:
        return SECTIONS_BY_NAME[self.section].noun if self.section in SECTIONS_BY_NAME else "settings"

    @property
    def title(self) -> str:
        """``+ tool search``, ``~ settings``."""
        what = self.noun if self.section == "settings" else f"{self.noun} {self.key}"
        return f"{ACTION_MARKS[self.action]} {what}" + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class Plan:
    tenant: str
    changes: tuple[Change, ...]

    @property
    def empty(self) -> bool:
        return not self.changes

    def count(self, action: Action) -> int:
        return sum(1 for change in self.changes if change.action == action)

    def summary(self) -> str:
        if self.empty:
            return "No changes: the tenant is as the file says."
        counts = [
            f"{self.count('add')} to add",
            f"{self.count('change')} to change",
            f"{self.count('adopt')} to take over",
            f"{self.count('remove')} to remove",
        ]
        return ", ".join(counts) + "."

    def lines(self) -> list[str]:
        """The plan as text, one object (then each of its fields) a line."""
        lines = [f"Plan for tenant {self.tenant}:"]
        for change in self.changes:
            lines.append(f"  {change.title}")
            lines.extend(f"      {field_change}" for field_change in change.fields)
        lines.append(self.summary())
        return lines

    def digest(self) -> str:
        """A digest of every change, values included (what an Apply button carries)."""
        payload = [
            [c.section, c.key, c.action, [[f.field, canonical(f.before), canonical(f.after)] for f in c.fields]]
            for c in self.changes
        ]
        return hashlib.sha256(canonical([self.tenant, payload]).encode()).hexdigest()


@dataclass
class Proposal:
    """A checked file and what applying it to ``tenant`` changes: the states it was planned from are what the apply
    carries out."""

    tenant: Tenant
    loaded: LoadedFile
    desired: State
    current: State
    plan: Plan
    # Items servers name that an upstream the file adds or changes may bring: looked for in the apply.
    unchecked: list[Unchecked] = field(default_factory=list)


def file_check(content: bytes | str) -> LoadedFile:
    """Read a configuration file and check it against the schema. Raises ``ConfigFileError``."""
    loaded = config_load(content)
    problems = schema_problems(loaded)
    if problems:
        raise ConfigFileError(problems)
    return loaded


def _field_changes(section_fields: tuple[str, ...], before: dict[str, Any], after: dict[str, Any]) -> list[FieldChange]:
    return [
        FieldChange(name, before.get(name), after.get(name))
        for name in section_fields
        if not same(before.get(name), after.get(name))
    ]


def _note(section_name: str, action: Action, entry: Entry | None, changes: list[FieldChange]) -> str:
    if entry is None:
        return ""
    if section_name == UPSTREAMS.name and action == "add":
        if entry.fields.get("enabled", True):
            return f"connects to {entry.fields['url']} and mirrors its catalog"
        return "disabled: nothing is mirrored until it is enabled"
    if section_name == OPENAPI_SOURCES.name and action in ("add", "change", "adopt") and (action == "add" or changes):
        return "imports the document from its location"
    if action == "adopt":
        return "made by hand: the file manages it from now on"
    return ""


def _diff(desired: State, current: State, managed: dict[str, set[str]]) -> tuple[list[Change], dict[str, list[Entry]]]:
    changes: list[Change] = []
    written: dict[str, list[Entry]] = {}
    settings = [
        FieldChange(name, current.settings.get(name), value)
        for name, value in desired.settings.items()
        if not same(current.settings.get(name), value)
    ]
    if settings:
        changes.append(Change("settings", "", "change", tuple(settings)))
    for section in SECTIONS:
        wanted, present, mine = desired.entries(section), current.entries(section), managed.get(section.name, set())
        for key in sorted(set(wanted) | (set(present) & mine)):
            entry, row = wanted.get(key), present.get(key)
            action: Action
            field_changes: list[FieldChange]
            if entry is None:
                action, field_changes = "remove", []
            elif row is None:
                action, field_changes = "add", []
            else:
                field_changes = _field_changes(section.fields, row.fields, entry.fields)
                action = "change" if key in mine else "adopt"
                if action == "change" and not field_changes:
                    continue
            if entry is not None and (action == "add" or field_changes):
                written.setdefault(section.name, []).append(
                    Entry(entry.key, entry.fields, entry.index, row.row if row is not None else None)
                )
            note = _note(section.name, action, entry, field_changes)
            changes.append(Change(section.name, key, action, tuple(field_changes), note))
    return changes, written


def configuration_plan(*, tenant: Tenant, loaded: LoadedFile, files_allowed: bool = False) -> Proposal:
    """What applying ``loaded`` (checked by ``file_check``) to ``tenant`` changes, checked as the admin would check
    each object it writes. ``files_allowed``: an OpenAPI source may be read from a file on this machine (the
    command; never the admin). Raises ``ConfigFileError`` with every problem found."""
    desired, problems = state_of_file(loaded)
    current = state_of_tenant(tenant)
    managed = managed_keys(tenant)
    changes, written = _diff(desired, current, managed)
    named, refused = name_problems(tenant=tenant, loaded=loaded, desired=desired, managed=managed)
    problems += named
    problems += imported_name_problems(tenant=tenant, loaded=loaded, desired=desired, managed=managed)
    problems += secret_problems(tenant=tenant, loaded=loaded, desired=desired)
    referenced, unchecked = reference_problems(
        tenant=tenant, loaded=loaded, desired=desired, current=current, managed=managed
    )
    problems += referenced
    settings = {f.field: f.after for change in changes if change.section == "settings" for f in change.fields}
    checked = {
        name: [entry for entry in entries if (name, entry.key) not in refused] for name, entries in written.items()
    }
    problems += written_problems(tenant=tenant, loaded=loaded, written=checked, settings=settings)
    imported = written.get(OPENAPI_SOURCES.name, [])
    problems += document_problems(loaded=loaded, imported=imported, files_allowed=files_allowed)
    if problems:
        raise ConfigFileError(problems)
    plan = Plan(tenant.slug, tuple(changes))
    return Proposal(tenant, loaded, desired, current, plan, unchecked)
