"""The sections of a tenant configuration file, one table: for each kind of object, its key, its fields in the
file's order with the defaults a file may leave out, which of the tenant's rows it holds, and how a row reads.

A section holds the tenant's own objects: an item mirrored from an upstream or imported from an OpenAPI document is
its source's (the source is in the file, the item is not), and its name is ``held`` against the file's items. A
server's selection names sources by name and items by key (``selections``); a server's rate limit names its server by
slug.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db.models import QuerySet

from mcp_platform.catalog_files.selections import selection_normalize, selection_read
from mcp_platform.quotas.models import Period, RateLimit
from tenants.models import OpenApiSource, Prompt, Resource, ResourceTemplate, Server, Tenant, Tool, Upstream

JSONObject = dict[str, Any]

# The tenant's own settings an admin edits; status and outbound networks are platform staff's, the slug is the
# tenant's identity (the file names it under ``tenant``).
SETTINGS_FIELDS = (
    "name",
    "instructions",
    "requires_authorization",
    "allowed_origins",
    "cache_ttl_ms",
    "cache_scope",
    "activity_record_arguments",
    "activity_retention_days",
)
PERIOD_NAMES: dict[int, str] = {
    Period.SECOND: "second",
    Period.MINUTE: "minute",
    Period.HOUR: "hour",
    Period.DAY: "day",
}
PERIOD_SECONDS = {name: int(seconds) for seconds, name in PERIOD_NAMES.items()}


def canonical(value: Any) -> str:
    """``value`` as JSON with sorted keys: how values are compared (1 and true differ, key order does not)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def same(a: Any, b: Any) -> bool:
    return canonical(a) == canonical(b)


class Holder(NamedTuple):
    """What holds a key the file's own objects cannot take: a source's item (``what``), and that source (its
    section in the file and its key there)."""

    what: str
    section: str
    source: str


@dataclass(frozen=True)
class Section:
    """One kind of object: ``name`` is the file's key for the list, ``noun`` how messages name one."""

    name: str
    noun: str
    fields: tuple[str, ...]
    defaults: Mapping[str, Any]
    key: Callable[[Mapping[str, Any]], str]
    rows: Callable[[Tenant], QuerySet[Any]]
    read: Callable[[Any], JSONObject]
    # The keys held by the tenant's rows this section does not hold (a source's items), and by what.
    held: Callable[[Tenant], dict[str, Holder]]
    # The file's values in the form ``read`` gives (e.g. a list kept sorted).
    normalize: Callable[[JSONObject], JSONObject] = lambda fields: fields

    def desired(self, given: Mapping[str, Any]) -> JSONObject:
        """An entry of the file with the defaults it left out (copies: the defaults stay as they are)."""
        filled = {name: json.loads(canonical(value)) for name, value in self.defaults.items()}
        filled.update(given)
        return self.normalize(filled)

    def written(self, fields: Mapping[str, Any]) -> JSONObject:
        """``fields`` as the file shows them: in the section's order, without the values that are the defaults."""
        return {
            name: fields[name]
            for name in self.fields
            if name in fields and not (name in self.defaults and same(fields[name], self.defaults[name]))
        }


def _own(model: type[Any], order: str) -> Callable[[Tenant], QuerySet[Any]]:
    def rows(tenant: Tenant) -> QuerySet[Any]:
        queryset = model._default_manager.filter(tenant=tenant, upstream__isnull=True)
        if model is Tool:
            queryset = queryset.filter(openapi_source__isnull=True)
        return queryset.order_by(order)

    return rows


def holder_of(row: Any, noun: str) -> Holder | None:
    """The source that holds ``row`` (an item: ``noun``), or None for one of the tenant's own."""
    if row.upstream_id is not None:
        return Holder(f"the {noun} mirrored from the upstream {row.upstream.name!r}", "upstreams", row.upstream.name)
    if getattr(row, "openapi_source_id", None) is not None:
        source = row.openapi_source
        what = f"the {noun} imported from the OpenAPI source {source.name!r}"
        return Holder(what, "openapi_sources", source.location)
    return None


def _held(model: type[Any], key_field: str, noun: str) -> Callable[[Tenant], dict[str, Holder]]:
    def held(tenant: Tenant) -> dict[str, Holder]:
        rows = model._default_manager.filter(tenant=tenant).select_related("upstream")
        if model is Tool:
            rows = rows.select_related("openapi_source")
        holders = ((getattr(row, key_field), holder_of(row, noun)) for row in rows)
        return {key: holder for key, holder in holders if holder is not None}

    return held


def _fields(*names: str) -> Callable[[Any], JSONObject]:
    return lambda row: {name: getattr(row, name) for name in names}


def _nothing_held(tenant: Tenant) -> dict[str, Holder]:
    return {}


TOOL_FIELDS = (
    "name",
    "title",
    "description",
    "backend",
    "config",
    "input_schema",
    "output_schema",
    "annotations",
    "icons",
    "task_support",
    "enabled",
    "required_scopes",
    "tags",
)
TOOLS = Section(
    name="tools",
    noun="tool",
    fields=TOOL_FIELDS,
    defaults={
        "title": "",
        "description": "",
        "backend": "static",
        "config": {},
        "input_schema": {"type": "object"},
        "output_schema": None,
        "annotations": None,
        "icons": None,
        "task_support": "forbidden",
        "enabled": True,
        "required_scopes": "",
        "tags": [],
    },
    key=lambda fields: str(fields["name"]),
    rows=_own(Tool, "name"),
    read=_fields(*TOOL_FIELDS),
    held=_held(Tool, "name", "tool"),
)

RESOURCE_FIELDS = ("uri", "name", "title", "description", "mime_type", "text", "blob", "annotations", "tags")
RESOURCES = Section(
    name="resources",
    noun="resource",
    fields=RESOURCE_FIELDS,
    defaults={
        "title": "",
        "description": "",
        "mime_type": "",
        "text": None,
        "blob": None,
        "annotations": None,
        "tags": [],
    },
    key=lambda fields: str(fields["uri"]),
    rows=_own(Resource, "uri"),
    read=_fields(*RESOURCE_FIELDS),
    held=_held(Resource, "uri", "resource"),
)

TEMPLATE_FIELDS = (
    *("name", "uri_template", "title", "description", "mime_type", "backend", "config", "completions", "tags"),
)
RESOURCE_TEMPLATES = Section(
    name="resource_templates",
    noun="resource template",
    fields=TEMPLATE_FIELDS,
    defaults={
        "title": "",
        "description": "",
        "mime_type": "",
        "backend": "static",
        "config": {},
        "completions": {},
        "tags": [],
    },
    key=lambda fields: str(fields["name"]),
    rows=_own(ResourceTemplate, "name"),
    read=_fields(*TEMPLATE_FIELDS),
    held=_held(ResourceTemplate, "name", "resource template"),
)

PROMPT_FIELDS = ("name", "title", "description", "arguments", "completions", "messages", "backend", "config", "tags")
PROMPTS = Section(
    name="prompts",
    noun="prompt",
    fields=PROMPT_FIELDS,
    defaults={
        "title": "",
        "description": "",
        "arguments": [],
        "completions": {},
        "messages": [],
        "backend": "static",
        "config": {},
        "tags": [],
    },
    key=lambda fields: str(fields["name"]),
    rows=_own(Prompt, "name"),
    read=_fields(*PROMPT_FIELDS),
    held=_held(Prompt, "name", "prompt"),
)

# ``session_tools`` is learnt by the platform (the tools an upstream asked questions in), not configured.
UPSTREAM_FIELDS = (
    *("name", "url", "prefix", "auth", "enabled", "session_mode", "change_policy", "withhold_incompatible"),
    *("excluded", "overrides"),
)
# Changes to its tools' definitions: accepted as they come, or held for an admin's approval (``tenants.pinning``).
POLICY_DEFAULTS = {"change_policy": "accept", "withhold_incompatible": False}
UPSTREAMS = Section(
    name="upstreams",
    noun="upstream",
    fields=UPSTREAM_FIELDS,
    defaults={
        "auth": None,
        "enabled": True,
        "session_mode": "auto",
        **POLICY_DEFAULTS,
        "excluded": [],
        "overrides": {},
    },
    key=lambda fields: str(fields["name"]),
    rows=lambda tenant: Upstream.objects.filter(tenant=tenant).order_by("name"),
    read=_fields(*UPSTREAM_FIELDS),
    held=_nothing_held,
)


OPENAPI_SOURCE_FIELDS = (
    *("location", "name", "prefix", "base_url", "secret_name", "client_id", "change_policy", "withhold_incompatible"),
)


def _source_read(source: OpenApiSource) -> JSONObject:
    fields = _fields(*OPENAPI_SOURCE_FIELDS)(source)
    fields["tools"] = sorted(source.tools.values_list("name", flat=True))  # type: ignore[attr-defined]
    return fields


OPENAPI_SOURCES = Section(
    name="openapi_sources",
    noun="OpenAPI source",
    fields=(*OPENAPI_SOURCE_FIELDS, "tools"),
    defaults={"prefix": "", "base_url": "", "secret_name": "", "client_id": "", **POLICY_DEFAULTS},
    key=lambda fields: str(fields["location"]),
    rows=lambda tenant: OpenApiSource.objects.filter(tenant=tenant).order_by("location"),
    read=_source_read,
    held=_nothing_held,
    normalize=lambda fields: {**fields, "tools": sorted(set(fields.get("tools") or []))},
)


SERVER_FIELDS = ("slug", "title", "instructions", "enabled", "required_scopes", "selection")


def _server_read(server: Server) -> JSONObject:
    fields = _fields(*SERVER_FIELDS)(server)
    fields["selection"] = selection_read(server)
    return fields


SERVERS = Section(
    name="servers",
    noun="server",
    fields=SERVER_FIELDS,
    defaults={"title": "", "instructions": "", "enabled": True, "required_scopes": "", "selection": {}},
    key=lambda fields: str(fields["slug"]),
    rows=lambda tenant: Server.objects.filter(tenant=tenant).order_by("slug"),
    read=_server_read,
    held=_nothing_held,
    normalize=lambda fields: {**fields, "selection": selection_normalize(fields.get("selection"))},
)


def rate_limit_key(fields: Mapping[str, Any]) -> str:
    """``tool:search``, ``client:abc``, ``server:reader``, or the scope alone for its default limit."""
    subject = fields.get("client_id") or fields.get("tool_name") or fields.get("server") or ""
    return f"{fields['scope']}:{subject}" if subject else str(fields["scope"])


def _limit_read(limit: RateLimit) -> JSONObject:
    fields = _fields("scope", "client_id", "tool_name", "rate", "period", "burst")(limit)
    fields["server"] = limit.server.slug if limit.server is not None else ""
    fields["period"] = PERIOD_NAMES.get(limit.period, str(limit.period))
    return fields


RATE_LIMITS = Section(
    name="rate_limits",
    noun="rate limit",
    fields=("scope", "client_id", "tool_name", "server", "rate", "period", "burst"),
    defaults={"client_id": "", "tool_name": "", "server": ""},
    key=rate_limit_key,
    rows=lambda tenant: (
        RateLimit.objects.filter(tenant=tenant)
        .select_related("server")
        .order_by("scope", "client_id", "tool_name", "server__slug")
    ),
    read=_limit_read,
    held=_nothing_held,
)

# In the file's order, which is also the order a plan lists them in.
SECTIONS: tuple[Section, ...] = (
    TOOLS,
    RESOURCES,
    RESOURCE_TEMPLATES,
    PROMPTS,
    UPSTREAMS,
    OPENAPI_SOURCES,
    SERVERS,
    RATE_LIMITS,
)
SECTIONS_BY_NAME = {section.name: section for section in SECTIONS}
