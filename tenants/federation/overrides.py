"""An upstream's items as its admin page shows them (mirrored and excluded, with the tenant's overrides), and the
checks a new set of exclusions and overrides must pass before ``upstream_items_update`` stores it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db import models

from tenants.federation.mirror import KINDS, OVERRIDE_FIELDS, item_key, local_name
from tenants.models import NAME_PATTERN, Prompt, Resource, ResourceTemplate, Tool, Upstream

KIND_TITLES = {"tools": "Tool", "resources": "Resource", "resource_templates": "Resource template", "prompts": "Prompt"}
KIND_ORDER = tuple(KIND_TITLES)
# Bounds on what one page may store: the upstream's own lists are bounded by the mirror's page limit.
MAX_OVERRIDES = 5000
MAX_DESCRIPTION = 10_000
NAME_LIMITS = {"tools": 128, "resources": 255, "resource_templates": 255, "prompts": 128}
# Catalog kinds whose names are unique in a tenant (a resource is known by its URI).
UNIQUE_NAMES: dict[str, type[models.Model]] = {"tools": Tool, "resource_templates": ResourceTemplate, "prompts": Prompt}


@dataclass
class UpstreamItem:
    """One item of an upstream: ``remote`` is its name (a resource: its URI) at the upstream."""

    kind: str
    remote: str
    served: bool
    # The name and description the tenant serves it under now (empty for an excluded item).
    name: str = ""
    description: str = ""
    # The upstream's own (with the prefix, for a name), where the mirror kept them.
    default_name: str = ""
    default_description: str = ""
    override_name: str = ""
    override_description: str = ""
    row: Any = None

    @property
    def key(self) -> str:
        return item_key(self.kind, self.remote)

    @property
    def kind_title(self) -> str:
        return KIND_TITLES[self.kind]


def upstream_items(upstream: Upstream) -> list[UpstreamItem]:
    """Every item the upstream's page lists: its mirrored rows, then what is excluded, by kind and remote name."""
    overrides = upstream.overrides or {}
    items: list[UpstreamItem] = []
    for kind in KINDS:
        for row in kind.model.objects.filter(upstream=upstream):  # type: ignore[attr-defined]
            remote = row.config.get("remote", {})
            limit = NAME_LIMITS[kind.key]
            items.append(
                UpstreamItem(
                    kind=kind.key,
                    remote=remote.get("name", row.name),
                    served=True,
                    name=row.name,
                    description=row.description,
                    default_name=local_name(upstream.prefix, remote.get("name", row.name), limit=limit),
                    default_description=remote.get("description") or "",
                    row=row,
                )
            )
    for resource in Resource.objects.filter(upstream=upstream):
        items.append(
            UpstreamItem(
                kind="resources",
                remote=resource.uri,
                served=True,
                name=resource.name,
                description=resource.description,
                row=resource,
            )
        )
    listed = {item.key for item in items}
    for key in upstream.excluded or []:
        kind_key, _, remote = str(key).partition(":")
        if kind_key in KIND_TITLES and remote and key not in listed:
            items.append(UpstreamItem(kind=kind_key, remote=remote, served=False))
            listed.add(key)
    for item in items:
        entry = overrides.get(item.key)
        if isinstance(entry, dict):
            item.override_name = str(entry.get("name") or "")
            item.override_description = str(entry.get("description") or "")
        if item.kind == "resources":
            # The mirror keeps no copy of a resource's own values: where an override is in force, the row holds it.
            item.default_name = "" if item.override_name else item.name
            item.default_description = "" if item.override_description else item.description
    items.sort(key=lambda i: (KIND_ORDER.index(i.kind), not i.served, i.remote))
    return items


def overrides_errors(*, upstream: Upstream, excluded: Any, overrides: Any) -> dict[str, list[str]]:
    """Why ``excluded`` and ``overrides`` cannot be stored for ``upstream``, by item key (``"overrides"`` for the
    whole); empty when they can. A new name must follow the catalog's name rule and be free in the tenant."""
    errors: dict[str, list[str]] = {}
    if not isinstance(excluded, list) or not all(isinstance(e, str) for e in excluded):
        return {"excluded": ['Excluded items must be a list such as ["tools:<name>"].']}
    if not isinstance(overrides, dict) or len(overrides) > MAX_OVERRIDES:
        return {"overrides": [f"Overrides must be an object of at most {MAX_OVERRIDES} items."]}
    wanted: dict[tuple[str, str], str] = {}
    for key, entry in overrides.items():
        kind, _, remote = str(key).partition(":")
        problems = errors.setdefault(key, [])
        if kind not in KIND_TITLES or not remote:
            problems.append('An override names its item as "tools:<name>", "prompts:<name>" and so on.')
        elif not isinstance(entry, dict) or set(entry) - set(OVERRIDE_FIELDS):
            problems.append("An override sets a name and a description, nothing else.")
        elif not all(isinstance(entry.get(f, ""), str) for f in OVERRIDE_FIELDS):
            problems.append("A name and a description are text.")
        else:
            problems.extend(_name_problems(kind, entry.get("name", "")))
            if len(entry.get("description", "")) > MAX_DESCRIPTION:
                problems.append(f"A description has at most {MAX_DESCRIPTION:,} characters.")
            if entry.get("name") and key not in excluded and kind in UNIQUE_NAMES:
                other = wanted.get((kind, entry["name"]))
                if other is not None:
                    problems.append(f"{entry['name']!r} is also the new name of {other.partition(':')[2]!r}.")
                wanted[(kind, entry["name"])] = key
        if not problems:
            del errors[key]
    for (kind, name), key in wanted.items():
        if key in errors:
            continue
        holder = _holder(upstream, kind, name, remote=key.partition(":")[2])
        if holder:
            errors[key] = [f"The name {name!r} is taken by {holder} of this tenant: choose another."]
    return errors


def _name_problems(kind: str, name: str) -> list[str]:
    if not name:
        return []
    limit = NAME_LIMITS[kind]
    if len(name) > limit:
        return [f"A name has at most {limit} characters."]
    if kind in ("tools", "prompts") and not re.fullmatch(NAME_PATTERN, name):
        return ["Use letters, digits, underscore, hyphen and dot (no spaces)."]
    return []


def _holder(upstream: Upstream, kind: str, name: str, *, remote: str) -> str:
    """Which other item of the tenant holds ``name`` (described for a person), or ""."""
    model = UNIQUE_NAMES[kind]
    rows = model.objects.filter(tenant_id=upstream.tenant_id, name=name)  # type: ignore[attr-defined]
    for row in rows.select_related("upstream"):
        if row.upstream_id == upstream.pk and row.config.get("remote", {}).get("name") == remote:
            continue  # the item itself
        title = KIND_TITLES[kind].lower()
        if row.upstream_id is None:
            return f"the {title} {row.name!r}"
        if row.upstream_id == upstream.pk:
            return f"the {title} {row.name!r} of this upstream"
        return f"the {title} {row.name!r} of the upstream {row.upstream.name!r}"
    return ""
