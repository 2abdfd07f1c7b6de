"""What a server within a tenant serves: its selection's rules (what an entry may say, which of the tenant's items
it chooses) and a tag's. Pure but for the one read of which items a selection chooses (``server_members``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from django.db import models
from django.db.models import Q, QuerySet

from tenants.models import MAX_TAGS, TAG_PATTERN, Prompt, Resource, ResourceTemplate, Server, Tenant, Tool

# The kinds of items a selection names by key, with what the key is: a tool's or prompt's name, a resource's URI, a
# resource template's URI template.
ItemKind = Literal["tools", "resources", "templates", "prompts"]
ITEM_KINDS: Final[tuple[ItemKind, ...]] = ("tools", "resources", "templates", "prompts")
UPSTREAM: Final = "upstream"
OPENAPI: Final = "openapi"
TAG: Final = "tag"
ENTRY_KINDS: Final = (*ITEM_KINDS, UPSTREAM, OPENAPI, TAG)
MAX_ENTRIES = 10_000
MAX_ENTRY_LENGTH = 2100
# Malformed entries named one by one in a refusal; the rest are counted.
MAX_PROBLEMS_NAMED = 20
_TAG = re.compile(TAG_PATTERN)
_ID = re.compile(r"[1-9][0-9]{0,18}")


def tag_errors(tags: Any) -> list[str]:
    """Why ``tags`` cannot be a catalog item's tags (a list of distinct tag names), or nothing."""
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return ['Tags must be a list of names such as ["read-only", "billing"].']
    problems = [
        f"{tag!r} is not a tag: use 1 to 64 letters, digits, _ . or -." for tag in tags if not _TAG.fullmatch(tag)
    ]
    if len(set(tags)) != len(tags):
        problems.append("A tag is listed twice.")
    if len(tags) > MAX_TAGS:
        problems.append(f"At most {MAX_TAGS} tags.")
    return problems


@dataclass(frozen=True)
class Selection:
    """A server's selection, parsed: items by kind and key, sources by id, tags. An item is served when any of
    them chooses it."""

    items: Mapping[str, frozenset[str]]
    upstreams: frozenset[int]
    openapi_sources: frozenset[int]
    tags: frozenset[str]

    def selects(
        self, kind: ItemKind, key: str, *, upstream_id: int | None, openapi_source_id: int | None, tags: Any
    ) -> bool:
        """Whether the item of ``kind`` with ``key`` (from those sources, with those tags) is chosen."""
        if key in self.items[kind]:
            return True
        if upstream_id is not None and upstream_id in self.upstreams:
            return True
        if openapi_source_id is not None and openapi_source_id in self.openapi_sources:
            return True
        return bool(self.tags) and isinstance(tags, list) and not self.tags.isdisjoint(tags)


def selection_errors(entries: Any) -> list[str]:
    """Why ``entries`` cannot be a server's selection, or nothing."""
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        return ['The selection must be a list of entries such as ["tools:search", "tag:read-only"].']
    if len(entries) > MAX_ENTRIES:
        return [f"At most {MAX_ENTRIES} entries."]
    problems = []
    for entry in entries:
        kind, colon, value = entry.partition(":")
        if not colon or kind not in ENTRY_KINDS:
            problems.append(f"{entry[:80]!r} does not start with one of {', '.join(k + ':' for k in ENTRY_KINDS)}.")
        elif not value or len(entry) > MAX_ENTRY_LENGTH or "\x00" in value:
            problems.append(f"{entry[:80]!r} names nothing (or is longer than {MAX_ENTRY_LENGTH} characters).")
        elif kind in (UPSTREAM, OPENAPI) and not _ID.fullmatch(value):
            problems.append(f"{entry!r}: a source is named by its id, a number.")
        elif kind == TAG and not _TAG.fullmatch(value):
            problems.append(f"{entry!r}: a tag has 1 to 64 letters, digits, _ . or -.")
    if len(problems) > MAX_PROBLEMS_NAMED:
        problems = [*problems[:MAX_PROBLEMS_NAMED], f"… and {len(problems) - MAX_PROBLEMS_NAMED} more entries."]
    if len(set(entries)) != len(entries):
        problems.append("An entry is listed twice.")
    return problems


def selection_parse(entries: Any) -> Selection:
    """``entries`` as a ``Selection``. Raises ``ValueError`` (``selection_errors``) for a malformed one."""
    problems = selection_errors(entries)
    if problems:
        raise ValueError(" ".join(problems))
    by_kind: dict[str, set[str]] = {kind: set() for kind in ENTRY_KINDS}
    for entry in entries:
        kind, _, value = entry.partition(":")
        by_kind[kind].add(value)
    return Selection(
        items={kind: frozenset(by_kind[kind]) for kind in ITEM_KINDS},
        upstreams=frozenset(int(v) for v in by_kind[UPSTREAM]),
        openapi_sources=frozenset(int(v) for v in by_kind[OPENAPI]),
        tags=frozenset(by_kind[TAG]),
    )


def selection_of(server: Server) -> Selection:
    """The stored server's selection (validated when it was saved)."""
    return selection_parse(server.selection)


# ---- which items a selection chooses --------------------------------------------------------------------------

# Per kind: the model and the field its items are keyed by in a selection.
_KEYS: Mapping[ItemKind, tuple[type[models.Model], str]] = {
    "tools": (Tool, "name"),
    "resources": (Resource, "uri"),
    "templates": (ResourceTemplate, "uri_template"),
    "prompts": (Prompt, "name"),
}


def _candidates(tenant: Tenant, selection: Selection, kind: ItemKind) -> QuerySet[Any]:
    """The (key, upstream id, tags[, OpenAPI source id]) of the tenant's items of ``kind`` the selection may
    choose: narrowed in the database where no tag needs reading."""
    model, key = _KEYS[kind]
    rows = model._default_manager.filter(tenant_id=tenant.pk)
    fields = [key, "upstream_id", "tags"]
    if kind == "tools":
        rows = rows.filter(enabled=True)  # a disabled tool is served by no server
        fields.append("openapi_source_id")
    if not selection.tags:
        chosen = Q(**{f"{key}__in": sorted(selection.items[kind])}) | Q(upstream_id__in=sorted(selection.upstreams))
        if kind == "tools":
            chosen |= Q(openapi_source_id__in=sorted(selection.openapi_sources))
        rows = rows.filter(chosen)
    return rows.values_list(*fields)


def _chosen(selection: Selection, kind: ItemKind, row: tuple[Any, ...]) -> bool:
    openapi_source_id = row[3] if len(row) > 3 else None
    return selection.selects(kind, row[0], upstream_id=row[1], openapi_source_id=openapi_source_id, tags=row[2])


def selects_nothing(selection: Selection) -> bool:
    return not any(selection.items.values()) and not (
        selection.upstreams or selection.openapi_sources or selection.tags
    )


def server_members(*, tenant: Tenant, selection: Selection, kind: ItemKind) -> frozenset[str]:
    """The keys of the tenant's items of ``kind`` that ``selection`` chooses (one query, none for an empty one)."""
    if selects_nothing(selection):
        return frozenset()
    return frozenset(row[0] for row in _candidates(tenant, selection, kind) if _chosen(selection, kind, row))


async def aserver_members(*, tenant: Tenant, selection: Selection, kind: ItemKind) -> frozenset[str]:
    if selects_nothing(selection):
        return frozenset()
    return frozenset([row[0] async for row in _candidates(tenant, selection, kind) if _chosen(selection, kind, row)])


def selection_entries(
    *,
    tools: Iterable[str] = (),
    resources: Iterable[str] = (),
    templates: Iterable[str] = (),
    prompts: Iterable[str] = (),
    upstreams: Iterable[int] = (),
    openapi_sources: Iterable[int] = (),
    tags: Iterable[str] = (),
) -> list[str]:
    """A selection's entries from what it chooses, in a stable order (the admin's editor writes it so)."""
    return [
        *(f"tools:{v}" for v in sorted(set(tools))),
        *(f"resources:{v}" for v in sorted(set(resources))),
        *(f"templates:{v}" for v in sorted(set(templates))),
        *(f"prompts:{v}" for v in sorted(set(prompts))),
        *(f"{UPSTREAM}:{v}" for v in sorted(set(upstreams))),
        *(f"{OPENAPI}:{v}" for v in sorted(set(openapi_sources))),
        *(f"{TAG}:{v}" for v in sorted(set(tags))),
    ]
