"""Mirroring an upstream's catalog: read every page of its tools, resources, templates and prompts, and bring the
rows that came from it up to date through the services (which bump the revision and send list_changed).

Each mirrored row keeps the upstream's own definition in ``config["remote"]`` and, in ``config["mirrored"]``, the
values the mirror last wrote to the fields an admin may change (name, title, description, and ``enabled`` for
tools). A field whose value differs from what the mirror last wrote was changed by an admin: a refresh keeps it.
The overrides set on the upstream's own page (``Upstream.overrides``: a name and a description per item) are written
over the upstream's values at every refresh, whatever the row holds.

An item that cannot be stored (a URI that does not parse, a name another item of the tenant holds, a schema nested
too deeply to check) is skipped and the report says why; the rest of the catalog is mirrored.

An upstream that holds changes (``Upstream.change_policy``) keeps its tools' approved definitions and records what it
proposes for an admin's review (``tenants.federation.held``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone

from mcp_core.caching import CacheHints, narrowest
from tenants import services
from tenants.bulk_changes import (
    CHANGE,
    CREATE,
    DELETE,
    SCHEDULED_REFRESH,
    Actor,
    BulkChange,
    BulkItem,
    bulk_change_announce,
)
from tenants.events import tenant_changed
from tenants.federation.connection import UpstreamConnection
from tenants.federation.held import ToolHold, tools_as_offered
from tenants.models import Backend, ChangePolicy, Prompt, Resource, ResourceTemplate, Tool, Upstream, Withheld
from tenants.pinning.ledger import held_changes_forget

JSONObject = dict[str, Any]
MAX_PAGES = 100
PROMPT_ARGUMENT_KEYS = ("name", "title", "description", "required")
TOOL_OVERRIDABLE = ("name", "title", "description", "enabled")
ENTRY_OVERRIDABLE = ("name", "title", "description")
# What ``Upstream.overrides`` may set, per item.
OVERRIDE_FIELDS = ("name", "description")


@dataclass
class Listing:
    """What an upstream offers, as wire dicts, and the cache hints it gave each list (by the keys above; the
    narrowest of its pages), where it gave any."""

    tools: list[JSONObject] = field(default_factory=list)
    resources: list[JSONObject] = field(default_factory=list)
    resource_templates: list[JSONObject] = field(default_factory=list)
    prompts: list[JSONObject] = field(default_factory=list)
    cache_hints: dict[str, JSONObject] = field(default_factory=dict)


@dataclass
class MirrorReport:
    created: int = 0
    updated: int = 0
    removed: int = 0
    skipped: list[str] = field(default_factory=list)  # why, item by item
    # The rows created, changed and deleted, for the admin's history and the activity log (``tenants.bulk_changes``).
    items: list[BulkItem] = field(default_factory=list)

    def __str__(self) -> str:
        counts = f"{self.created} added, {self.updated} updated, {self.removed} removed"
        if not self.skipped:
            return counts
        return f"{counts}, {len(self.skipped)} skipped ({' '.join(self.skipped)})"


async def listing_fetch(connection: UpstreamConnection) -> Listing:
    """Every page of every list the upstream declares. Raises what the SDK raises (the caller reports it)."""
    client = connection.client
    capabilities = client.server_capabilities
    listing = Listing()

    async def pages(fetch: Callable[[str | None], Any], key: str) -> list[JSONObject]:
        items: list[JSONObject] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await fetch(cursor)
            items.extend(i.model_dump(by_alias=True, mode="json", exclude_none=True) for i in getattr(page, key))
            _note_cache_hints(listing, key, page)
            cursor = page.next_cursor
            if not cursor:
                break
        return items

    if capabilities.tools is not None:
        listing.tools = await pages(lambda c: client.list_tools(cursor=c, cache_mode="bypass"), "tools")
    if capabilities.resources is not None:
        listing.resources = await pages(lambda c: client.list_resources(cursor=c, cache_mode="bypass"), "resources")
        listing.resource_templates = await pages(
            lambda c: client.list_resource_templates(cursor=c, cache_mode="bypass"), "resource_templates"
        )
    if capabilities.prompts is not None:
        listing.prompts = await pages(lambda c: client.list_prompts(cursor=c, cache_mode="bypass"), "prompts")
    return listing


def _note_cache_hints(listing: Listing, key: str, page: Any) -> None:
    """Narrow the hints of list ``key`` by those ``page`` carried on the wire (nothing when it carried none)."""
    if not {"ttl_ms", "cache_scope"} & page.model_fields_set:
        return
    hints = CacheHints(ttl_ms=page.ttl_ms, scope="public" if page.cache_scope == "public" else "private")
    if key in listing.cache_hints:
        stored = listing.cache_hints[key]
        hints = narrowest(hints, CacheHints(ttl_ms=stored["ttlMs"], scope=stored["cacheScope"]))
    listing.cache_hints[key] = {"ttlMs": hints.ttl_ms, "cacheScope": hints.scope}


def local_name(prefix: str, name: str, *, limit: int = 128) -> str:
    """``prefix + name`` in the catalog's name alphabet (other characters become ``_``)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", f"{prefix}{name}")[:limit]


def item_key(kind: str, remote: str) -> str:
    """How ``Upstream.excluded`` and ``Upstream.overrides`` name an item: ``tools:echo``, ``resources:notes://a``."""
    return f"{kind}:{remote}"


def _overridden(upstream: Upstream, key: str, desired: JSONObject) -> set[str]:
    """Write the item's overrides into ``desired``; the fields they set."""
    entry = (upstream.overrides or {}).get(key)
    if not isinstance(entry, dict):
        return set()
    fields = {f for f in OVERRIDE_FIELDS if isinstance(entry.get(f), str) and entry[f]}
    desired.update({f: entry[f] for f in fields})
    return fields


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _tool_fields(upstream: Upstream, wire: JSONObject) -> JSONObject:
    return {
        "name": local_name(upstream.prefix, wire["name"]),
        "title": wire.get("title") or "",
        "description": wire.get("description") or "",
        "input_schema": wire.get("inputSchema") or {"type": "object"},
        "output_schema": wire.get("outputSchema"),
        "annotations": wire.get("annotations"),
        "icons": wire.get("icons"),
        "backend": Backend.UPSTREAM,
        "enabled": True,
        "withheld": Withheld.NO,
    }


def _template_fields(upstream: Upstream, wire: JSONObject) -> JSONObject:
    return {
        "name": local_name(upstream.prefix, wire["name"], limit=255),
        "uri_template": wire["uriTemplate"],
        "title": wire.get("title") or "",
        "description": wire.get("description") or "",
        "mime_type": wire.get("mimeType") or "",
        "backend": Backend.UPSTREAM,
    }


def _prompt_fields(upstream: Upstream, wire: JSONObject) -> JSONObject:
    arguments = [{k: a[k] for k in PROMPT_ARGUMENT_KEYS if k in a} for a in wire.get("arguments") or []]
    return {
        "name": local_name(upstream.prefix, wire["name"]),
        "title": wire.get("title") or "",
        "description": wire.get("description") or "",
        "arguments": arguments,
        "backend": Backend.UPSTREAM,
    }


def _resource_fields(wire: JSONObject) -> JSONObject:
    # The URI is the upstream's (reads are proxied by it); the content is not stored: reads go to the upstream.
    return {
        "name": wire["name"],
        "title": wire.get("title") or "",
        "description": wire.get("description") or "",
        "mime_type": wire.get("mimeType") or "",
        "annotations": wire.get("annotations"),
    }


_SKIPPED = object()


def _stored(report: MirrorReport, kind: str, name: str, write: Callable[[], Any]) -> Any:
    """Run ``write`` (a service call for one item) in a savepoint; what it returned, or ``_SKIPPED`` when it was
    refused (the item is skipped, and the report says which and why)."""
    try:
        with transaction.atomic():
            return write()
    except ValidationError as exc:
        problems = (
            "; ".join(f"{f}: {' '.join(m)}" for f, m in exc.message_dict.items())
            if hasattr(exc, "error_dict")
            else " ".join(exc.messages)
        )
        report.skipped.append(f"The upstream's {kind[:-1].replace('_', ' ')} {name!r} cannot be added: {problems}")
        return _SKIPPED


@dataclass(frozen=True)
class _Kind:
    key: str
    model: type[models.Model]
    fields: Callable[[Upstream, JSONObject], JSONObject]
    overridable: tuple[str, ...]
    create: Callable[..., Any]
    update: Callable[[Any, JSONObject], Any]
    delete: Callable[[Any], None]


KINDS = (
    _Kind(
        "tools",
        Tool,
        _tool_fields,
        TOOL_OVERRIDABLE,
        services.tool_create,
        lambda row, data: services.tool_update(tool=row, data=data),
        lambda row: services.tool_delete(tool=row),
    ),
    _Kind(
        "resource_templates",
        ResourceTemplate,
        _template_fields,
        ENTRY_OVERRIDABLE,
        services.resource_template_create,
        lambda row, data: services.resource_template_update(template=row, data=data),
        lambda row: services.resource_template_delete(template=row),
    ),
    _Kind(
        "prompts",
        Prompt,
        _prompt_fields,
        ENTRY_OVERRIDABLE,
        services.prompt_create,
        lambda row, data: services.prompt_update(prompt=row, data=data),
        lambda row: services.prompt_delete(prompt=row),
    ),
)


def _mirror_kind(
    upstream: Upstream,
    kind: _Kind,
    items: Iterable[JSONObject],
    report: MirrorReport,
    *,
    overrides_only: bool,
    hold: ToolHold | None = None,
) -> None:
    # Edits made on the item's own page are kept, but for the fields the upstream's page decides when it is saved.
    kept = tuple(f for f in kind.overridable if not (overrides_only and f in OVERRIDE_FIELDS))
    excluded = set(upstream.excluded or [])
    existing = {row.config["remote"]["name"]: row for row in kind.model.objects.filter(upstream=upstream)}  # type: ignore[attr-defined]
    seen: set[str] = set()
    for wire in items:
        remote_name = wire["name"]
        key = item_key(kind.key, remote_name)
        if key in excluded or remote_name in seen:
            continue
        seen.add(remote_name)
        row = existing.get(remote_name)
        withheld = ""
        if hold is not None:
            served, withheld = hold.served(key, row, wire)
            if served is None:
                continue  # a new tool waits for approval
            wire = served
        desired = kind.fields(upstream, wire)
        if withheld:
            desired["withheld"] = withheld
        explicit = _overridden(upstream, key, desired)
        config = {"remote": wire, "mirrored": {f: desired[f] for f in kind.overridable if f in desired}}
        if row is None:
            create = partial(kind.create, tenant=upstream.tenant, upstream=upstream, config=config, **desired)
            created = _stored(report, kind.key, remote_name, create)
            if created is not _SKIPPED:
                report.created += 1
                report.items.append(BulkItem.of(CREATE, created))
                if hold is not None:
                    hold.applied(key)
            continue
        mirrored = row.config.get("mirrored", {})
        data = {
            f: value
            for f, value in desired.items()
            # A field an admin changed since the last mirror (it differs from what was written then) stays, unless
            # the upstream's page overrides it.
            if f in explicit or not (f in kept and f in mirrored and not _same(getattr(row, f), mirrored[f]))
        }
        data["config"] = config
        data = {f: value for f, value in data.items() if not _same(getattr(row, f), value)}
        if not data:
            if hold is not None:
                hold.applied(key)
            continue
        if _stored(report, kind.key, remote_name, partial(kind.update, row, data)) is not _SKIPPED:
            report.updated += 1
            report.items.append(BulkItem.of(CHANGE, row))
            if hold is not None:
                hold.applied(key)
    for remote_name, row in existing.items():
        if remote_name in seen:
            continue
        key = item_key(kind.key, remote_name)
        if hold is not None and key in excluded:
            hold.left_out(key)
        elif hold is not None and not hold.removed(key, row):
            # Withheld until its removal is decided: the upstream no longer answers for it.
            withhold = partial(kind.update, row, {"withheld": Withheld.REMOVED})
            if row.withheld != Withheld.REMOVED and _stored(report, kind.key, remote_name, withhold) is not _SKIPPED:
                report.updated += 1
                report.items.append(BulkItem.of(CHANGE, row))
            continue
        report.items.append(BulkItem.of(DELETE, row))
        kind.delete(row)
        report.removed += 1


def _mirror_resources(upstream: Upstream, items: Iterable[JSONObject], report: MirrorReport) -> None:
    excluded = set(upstream.excluded or [])
    existing = {row.uri: row for row in Resource.objects.filter(upstream=upstream)}
    seen: set[str] = set()
    for wire in items:
        uri = wire["uri"]
        if f"resources:{uri}" in excluded or uri in seen:
            continue
        seen.add(uri)
        desired = _resource_fields(wire)
        _overridden(upstream, item_key("resources", uri), desired)
        row = existing.get(uri)
        if row is None:
            create = partial(services.resource_create, tenant=upstream.tenant, upstream=upstream, uri=uri, text="")
            created = _stored(report, "resources", uri, partial(create, **desired))
            if created is not _SKIPPED:
                report.created += 1
                report.items.append(BulkItem.of(CREATE, created))
            continue
        data = {f: value for f, value in desired.items() if not _same(getattr(row, f), value)}
        update = partial(services.resource_update, resource=row, data=data)
        if data and _stored(report, "resources", uri, update) is not _SKIPPED:
            report.updated += 1
            report.items.append(BulkItem.of(CHANGE, row))
    for uri, row in existing.items():
        if uri not in seen:
            report.items.append(BulkItem.of(DELETE, row))
            services.resource_delete(resource=row)
            report.removed += 1


def listing_stored(upstream: Upstream) -> Listing:
    """What the upstream offered at the last refresh, as far as its mirrored rows keep it (an excluded item is not
    kept; a resource keeps the values written last, overrides included): a refresh without the network."""
    listing = Listing(cache_hints=upstream.list_cache_hints)
    for kind in KINDS:
        rows = kind.model.objects.filter(upstream=upstream).order_by("pk")  # type: ignore[attr-defined]
        # Tools: with the changes held for review put back, so that the mirror decides as the last refresh did.
        offered = tools_as_offered(upstream, rows) if kind.key == "tools" else [row.config["remote"] for row in rows]
        setattr(listing, kind.key, offered)
    listing.resources = [
        {
            "uri": row.uri,
            "name": row.name,
            "title": row.title,
            "description": row.description,
            "mimeType": row.mime_type,
            **({"annotations": row.annotations} if row.annotations is not None else {}),
        }
        for row in Resource.objects.filter(upstream=upstream).order_by("pk")
    ]
    return listing


def mirror_apply(
    *,
    upstream: Upstream,
    listing: Listing,
    actor: Actor = SCHEDULED_REFRESH,
    operation: str = "upstream refresh",
    refreshed: bool = True,
    overrides_only: bool = False,
    approving: Collection[str] = (),
    approve_all: bool = False,
) -> MirrorReport:
    """Bring the rows mirrored from ``upstream`` in line with ``listing``, in one transaction; what changed is
    announced after commit as ``operation`` by ``actor`` (``tenants.bulk_changes``). ``refreshed``: the listing
    was read from the upstream just now (its time is recorded). ``overrides_only``: names and descriptions are the
    upstream's or ``Upstream.overrides``', and an edit of them on the item's own page is dropped (the upstream's page
    showed it as an override, and saving that page decided).

    An upstream that holds changes keeps its tools' approved definitions and records its proposals (when
    ``refreshed``); ``approving``: the keys (``tools:<name>``) of held changes an admin approved, applied now;
    ``approve_all``: everything listed is approved (adding an upstream approves what it offers).

    An item that cannot be stored (e.g. its name is taken by another item of the tenant) is skipped, and
    ``report.skipped`` says which and why; an item stored before stays as it was.
    """
    report = MirrorReport()
    with transaction.atomic():
        holding = upstream.change_policy == ChangePolicy.HOLD and not approve_all
        hold = ToolHold(upstream, recording=refreshed, approving=approving) if holding else None
        for kind in KINDS:
            items = getattr(listing, kind.key)
            tools_hold = hold if kind.key == "tools" else None
            _mirror_kind(upstream, kind, items, report, overrides_only=overrides_only, hold=tools_hold)
        _mirror_resources(upstream, listing.resources, report)
        if hold is not None:
            hold.finish()
        else:
            # What the upstream lists is what it serves now: nothing waits.
            held_changes_forget(source=upstream)
        if refreshed:
            Upstream.objects.filter(pk=upstream.pk).update(
                last_refreshed_at=timezone.now(), list_cache_hints=listing.cache_hints
            )
        if listing.cache_hints != upstream.list_cache_hints:
            # The tenant's lists carry them (cached with its catalog): a new revision makes every process re-read.
            upstream.list_cache_hints = listing.cache_hints
            tenant_changed(tenant_id=upstream.tenant_id)
        bulk_change_announce(
            BulkChange(
                tenant_id=upstream.tenant_id,
                operation=operation,
                source=upstream.name,
                actor=actor,
                items=list(report.items),
            )
        )
    return report
