"""A server's selection as a configuration file writes it: items by their keys, sources by their names (a database id
means nothing on another platform), tags; read from the stored entries and written back as entries.

The file's selection is a mapping of lists: ``tools``, ``prompts`` (names), ``resources`` (URIs),
``resource_templates`` (URI templates), ``upstreams`` (names), ``openapi_sources`` (names; the location where two of
the tenant's sources share a name), ``tags``. A stored entry that names nothing of the tenant now (an item deleted
since, a source removed) chooses nothing and is left out of what a file reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from django.core.exceptions import ValidationError

from tenants.models import OpenApiSource, Prompt, Resource, ResourceTemplate, Server, Tenant, Tool, Upstream
from tenants.selection import ItemKind, selection_entries, selection_parse

JSONObject = dict[str, Any]
Selection = dict[str, list[str]]

# The file's item lists, each with its kind in a stored selection, its model and the field that keys it there.
ITEM_LISTS: Final[dict[str, tuple[ItemKind, type[Any], str]]] = {
    "tools": ("tools", Tool, "name"),
    "resources": ("resources", Resource, "uri"),
    "resource_templates": ("templates", ResourceTemplate, "uri_template"),
    "prompts": ("prompts", Prompt, "name"),
}
SOURCE_LISTS: Final = ("upstreams", "openapi_sources")
# In the file's order.
SELECTION_LISTS: Final = (*ITEM_LISTS, *SOURCE_LISTS, "tags")


def selection_normalize(selection: Mapping[str, Any] | None) -> Selection:
    """A file's selection as reads give it: every list sorted, each value once, empty lists left out."""
    given = selection or {}
    return {name: sorted(set(given[name])) for name in SELECTION_LISTS if given.get(name)}


def openapi_labels(sources: Iterable[tuple[str, str]]) -> dict[str, str]:
    """How a file names each OpenAPI source, by location: its name, or its location when another source of the same
    tenant has that name too. ``sources``: (location, name) pairs."""
    pairs = list(sources)
    names = [name for _, name in pairs]
    return {location: name if names.count(name) == 1 else location for location, name in pairs}


def selection_read(server: Server) -> Selection:
    """The stored selection of ``server`` as a file writes it (entries naming nothing of its tenant left out)."""
    parsed = selection_parse(server.selection)
    tenant_id = server.tenant_id
    read: Selection = {}
    for name, (kind, model, key) in ITEM_LISTS.items():
        wanted = parsed.items[kind]
        if wanted:
            found = model._default_manager.filter(tenant_id=tenant_id, **{f"{key}__in": sorted(wanted)})
            read[name] = sorted(set(found.values_list(key, flat=True)))
    if parsed.upstreams:
        upstreams = Upstream.objects.filter(tenant_id=tenant_id, pk__in=sorted(parsed.upstreams))
        read["upstreams"] = sorted(upstreams.values_list("name", flat=True))
    if parsed.openapi_sources:
        sources = list(OpenApiSource.objects.filter(tenant_id=tenant_id).values_list("pk", "location", "name"))
        labels = openapi_labels((location, name) for _, location, name in sources)
        read["openapi_sources"] = sorted(labels[loc] for pk, loc, _ in sources if pk in parsed.openapi_sources)
    if parsed.tags:
        read["tags"] = sorted(parsed.tags)
    return {name: values for name, values in read.items() if values}


def openapi_source_named(sources: Iterable[tuple[str, str]], value: str) -> str | None:
    """The location of the source a file's ``value`` names among ``sources`` ((location, name) pairs): the one of
    that name, else the one at that location; None when none is, or when several share the name."""
    pairs = list(sources)
    named = [location for location, name in pairs if name == value]
    if len(named) == 1:
        return named[0]
    if value in (location for location, _ in pairs):
        return value
    return None


def selection_stored(*, tenant: Tenant, selection: Mapping[str, Any]) -> list[str]:
    """A file's selection as the stored entries of a server of ``tenant`` (sources by id, as they are now). Raises
    ``ValidationError`` for a source the tenant does not have (the plan refuses those first)."""
    chosen = selection_normalize(selection)
    upstream_ids = dict(Upstream.objects.filter(tenant=tenant).values_list("name", "pk"))
    sources = list(OpenApiSource.objects.filter(tenant=tenant).values_list("location", "name", "pk"))
    source_ids = {location: pk for location, _, pk in sources}
    missing = [f"upstream {name!r}" for name in chosen.get("upstreams", []) if name not in upstream_ids]
    openapi_ids = []
    for value in chosen.get("openapi_sources", []):
        location = openapi_source_named(((loc, name) for loc, name, _ in sources), value)
        if location is None:
            missing.append(f"OpenAPI source {value!r}")
        else:
            openapi_ids.append(source_ids[location])
    if missing:
        raise ValidationError({"selection": [f"The tenant has no {what}." for what in missing]})
    upstreams = [upstream_ids[name] for name in chosen.get("upstreams", [])]
    return selection_entries_of(chosen, upstreams=upstreams, openapi_sources=openapi_ids)


def selection_entries_of(
    selection: Mapping[str, Any], *, upstreams: Iterable[int] = (), openapi_sources: Iterable[int] = ()
) -> list[str]:
    """A file's ``selection`` as stored entries: its items and tags as it names them, its sources by the ids given
    (none: only its items and tags, as the plan checks a selection whose sources it looks for by name)."""
    return selection_entries(
        tools=selection.get("tools", []),
        resources=selection.get("resources", []),
        templates=selection.get("resource_templates", []),
        prompts=selection.get("prompts", []),
        upstreams=upstreams,
        openapi_sources=openapi_sources,
        tags=selection.get("tags", []),
    )
