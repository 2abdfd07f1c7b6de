"""Reads of tenants and their catalogs, always scoped by tenant; one query per call.

Lists are keyset-paginated by natural key (name, or URI for resources), resumed after the last key seen;
each has a sync form and an ``a``-prefixed async form sharing one queryset builder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from django.core.validators import slug_re
from django.db.models import Model, QuerySet

from mcp_core.caching import CacheHints, narrowest
from mcp_core.text import storable
from tenants.models import (
    NAME_PATTERN,
    Membership,
    Prompt,
    Resource,
    ResourceTemplate,
    Server,
    Tenant,
    Tool,
    Upstream,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

T = TypeVar("T", bound=Model)

# What a stored slug or tool/prompt name can look like: anything else names nothing, and is not looked up.
_NAME = re.compile(NAME_PATTERN)
SLUG_MAX_LENGTH = Tenant._meta.get_field("slug").max_length or 0


def _possible_slug(slug: str) -> bool:
    return len(slug) <= SLUG_MAX_LENGTH and slug_re.fullmatch(slug) is not None


def _possible_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


@dataclass(frozen=True)
class Slice(Generic[T]):
    """Up to ``limit`` rows and whether more follow the last of them."""

    items: list[T]
    has_more: bool


def _slice(rows: list[T], limit: int) -> Slice[T]:
    return Slice(items=rows[:limit], has_more=len(rows) > limit)


def _after(queryset: QuerySet[T], key: str, after: str | None, limit: int) -> QuerySet[T]:
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if after is not None:
        queryset = queryset.filter(**{f"{key}__gt": after})
    # One row more than asked tells whether another page exists, in the same query.
    return queryset.order_by(key)[: limit + 1]


# ---- tenants -----------------------------------------------------------------------------------------


def _servable(slug: str) -> QuerySet[Tenant]:
    return Tenant.objects.filter(slug=slug, status=Tenant.Status.ACTIVE)


def tenant_get_servable(*, slug: str) -> Tenant | None:
    """The active tenant called ``slug``; None when it does not exist or is suspended (or cannot be a slug)."""
    return _servable(slug).first() if _possible_slug(slug) else None


async def atenant_get_servable(*, slug: str) -> Tenant | None:
    return await _servable(slug).afirst() if _possible_slug(slug) else None


def tenant_list_for_user(*, user: User) -> QuerySet[Tenant]:
    """The tenants ``user`` is a member of, by slug."""
    return Tenant.objects.filter(memberships__user=user).order_by("slug")


def tenants_by_slug(*, slugs: set[str]) -> dict[str, Tenant]:
    """The tenants (any status) whose slug is in ``slugs``, keyed by slug."""
    return {tenant.slug: tenant for tenant in Tenant.objects.filter(slug__in=slugs)}


def membership_get(*, tenant: Tenant, user: User) -> Membership | None:
    return Membership.objects.filter(tenant=tenant, user=user).first()


# ---- tools -------------------------------------------------------------------------------------------


def _enabled_tools(tenant: Tenant | None) -> QuerySet[Tool]:
    # A disabled tool is invisible to every read: not listed, not found, its scopes not offered; so is a tool its
    # source withholds while a held change of it waits (``tenants.pinning``).
    tools = Tool.objects.filter(enabled=True, withheld="")
    return tools if tenant is None else tools.filter(tenant_id=tenant.pk)


def _among(queryset: QuerySet[T], key: str, among: frozenset[str] | None) -> QuerySet[T]:
    """``queryset`` narrowed to the rows whose ``key`` is in ``among`` (a server's selection; None: every row). An
    empty ``among`` runs no query."""
    return queryset if among is None else queryset.filter(**{f"{key}__in": sorted(among)})


def _tools(tenant: Tenant, after: str | None, limit: int, among: frozenset[str] | None = None) -> QuerySet[Tool]:
    return _after(_among(_enabled_tools(tenant), "name", among), "name", after, limit)


def tool_visible(tool: Tool, granted: frozenset[str] | None) -> bool:
    """Whether a caller holding ``granted`` scopes may see and call ``tool`` (None: no authorization in play)."""
    return granted is None or set(tool.required_scopes.split()) <= granted


def tool_list(*, tenant: Tenant, after: str | None, limit: int) -> Slice[Tool]:
    """Enabled tools named after ``after``, by name. Raises ValueError for a limit below 1."""
    return _slice(list(_tools(tenant, after, limit)), limit)


async def atool_list(
    *,
    tenant: Tenant,
    after: str | None,
    limit: int,
    granted: frozenset[str] | None = None,
    among: frozenset[str] | None = None,
) -> Slice[Tool]:
    """Enabled tools named after ``after`` that a caller holding ``granted`` scopes may use (all when None), among
    the names ``among`` (a server's selection; None: all).

    Hidden tools are skipped without shortening the page: batches continue after the last row read until the
    page is full or the catalog ends (one query when nothing is hidden).
    """
    visible: list[Tool] = []
    while True:
        batch = [tool async for tool in _tools(tenant, after, limit, among)]
        visible.extend(tool for tool in batch if tool_visible(tool, granted))
        if len(visible) > limit or len(batch) <= limit:
            return _slice(visible, limit)
        after = batch[-1].name


def tool_get(*, tenant: Tenant, name: str) -> Tool | None:
    """The enabled tool called ``name``; None otherwise (without a query for a name no tool can have)."""
    return _enabled_tools(tenant).filter(name=name).first() if _possible_name(name) else None


async def atool_get(*, tenant: Tenant, name: str) -> Tool | None:
    # With its upstream (if any): a proxied call needs it, and the tenant cache keeps the pair.
    found = _enabled_tools(tenant).select_related("upstream").filter(name=name)
    return await found.afirst() if _possible_name(name) else None


def tool_scope_vocabulary(*, tenant: Tenant | None) -> set[str]:
    """Every scope some enabled tool requires: of ``tenant``, or of every tenant when None."""
    lists = _enabled_tools(tenant).exclude(required_scopes="").values_list("required_scopes", flat=True)
    return {scope for value in lists.distinct() for scope in value.split()}


# ---- resources and templates -------------------------------------------------------------------------


def _resources(
    tenant: Tenant, after: str | None, limit: int, among: frozenset[str] | None = None
) -> QuerySet[Resource]:
    # Contents stay in the database until a read asks for them.
    listed = Resource.objects.filter(tenant_id=tenant.pk).defer("text", "blob")
    return _after(_among(listed, "uri", among), "uri", after, limit)


def resource_list(*, tenant: Tenant, after: str | None, limit: int) -> Slice[Resource]:
    """Resources with a URI after ``after``, by URI, without their contents loaded."""
    return _slice(list(_resources(tenant, after, limit)), limit)


async def aresource_list(
    *, tenant: Tenant, after: str | None, limit: int, among: frozenset[str] | None = None
) -> Slice[Resource]:
    """Resources with a URI after ``after``, by URI, among the URIs ``among`` (None: all)."""
    return _slice([resource async for resource in _resources(tenant, after, limit, among)], limit)


def resource_get(*, tenant: Tenant, uri: str) -> Resource | None:
    return Resource.objects.filter(tenant_id=tenant.pk, uri=uri).first() if storable(uri) else None


async def aresource_get(*, tenant: Tenant, uri: str) -> Resource | None:
    found = Resource.objects.select_related("upstream").filter(tenant_id=tenant.pk, uri=uri)
    return await found.afirst() if storable(uri) else None


def _templates(
    tenant: Tenant, after: str | None, limit: int, among: frozenset[str] | None = None
) -> QuerySet[ResourceTemplate]:
    templates = _among(ResourceTemplate.objects.filter(tenant_id=tenant.pk), "uri_template", among)
    return _after(templates, "name", after, limit)


def resource_template_list(*, tenant: Tenant, after: str | None, limit: int) -> Slice[ResourceTemplate]:
    """Resource templates named after ``after``, by name."""
    return _slice(list(_templates(tenant, after, limit)), limit)


async def aresource_template_list(
    *, tenant: Tenant, after: str | None, limit: int, among: frozenset[str] | None = None
) -> Slice[ResourceTemplate]:
    """Resource templates named after ``after``, by name, among those whose URI template is in ``among`` (None:
    all)."""
    return _slice([template async for template in _templates(tenant, after, limit, among)], limit)


def resource_templates_all(*, tenant: Tenant) -> list[ResourceTemplate]:
    """Every template of the tenant by name: the order in which URIs are matched against them."""
    return list(ResourceTemplate.objects.filter(tenant_id=tenant.pk).order_by("name"))


async def aresource_templates_all(*, tenant: Tenant) -> list[ResourceTemplate]:
    return [
        t
        async for t in ResourceTemplate.objects.select_related("upstream").filter(tenant_id=tenant.pk).order_by("name")
    ]


async def aresource_template_by_uri_template(*, tenant: Tenant, uri_template: str) -> ResourceTemplate | None:
    """The first template (by name) declaring exactly ``uri_template``; completion refs name templates so."""
    if not storable(uri_template):
        return None
    found = ResourceTemplate.objects.filter(tenant_id=tenant.pk, uri_template=uri_template).order_by("name")
    return await found.afirst()


# ---- prompts -----------------------------------------------------------------------------------------


def _prompts(tenant: Tenant, after: str | None, limit: int, among: frozenset[str] | None = None) -> QuerySet[Prompt]:
    return _after(_among(Prompt.objects.filter(tenant_id=tenant.pk), "name", among), "name", after, limit)


def prompt_list(*, tenant: Tenant, after: str | None, limit: int) -> Slice[Prompt]:
    """Prompts named after ``after``, by name."""
    return _slice(list(_prompts(tenant, after, limit)), limit)


async def aprompt_list(
    *, tenant: Tenant, after: str | None, limit: int, among: frozenset[str] | None = None
) -> Slice[Prompt]:
    """Prompts named after ``after``, by name, among the names ``among`` (None: all)."""
    return _slice([prompt async for prompt in _prompts(tenant, after, limit, among)], limit)


def prompt_get(*, tenant: Tenant, name: str) -> Prompt | None:
    return Prompt.objects.filter(tenant_id=tenant.pk, name=name).first() if _possible_name(name) else None


async def aprompt_get(*, tenant: Tenant, name: str) -> Prompt | None:
    found = Prompt.objects.select_related("upstream").filter(tenant_id=tenant.pk, name=name)
    return await found.afirst() if _possible_name(name) else None


async def tenant_outbound_networks(tenant_id: int) -> tuple[str, ...]:
    """The extra networks platform staff allowed ``tenant_id``'s outbound requests (the outbound door reads them)."""
    networks = await Tenant.objects.filter(pk=tenant_id).values_list("outbound_allowed_networks", flat=True).afirst()
    return tuple(networks or ())


# ---- upstreams ----------------------------------------------------------------------------------------


async def aupstream_list_cache_hints(*, tenant: Tenant) -> dict[str, CacheHints]:
    """By list (``tools``, ``resources``, ``resource_templates``, ``prompts``): the narrowest cache hints the tenant's
    upstreams gave it at their last refresh. A list no upstream gave hints for is missing."""
    found: dict[str, CacheHints] = {}
    async for stored in Upstream.objects.filter(tenant_id=tenant.pk).values_list("list_cache_hints", flat=True):
        for key, value in (stored or {}).items():
            hints = CacheHints(ttl_ms=value["ttlMs"], scope=value["cacheScope"])
            found[key] = narrowest(found[key], hints) if key in found else hints
    return found


# ---- servers -------------------------------------------------------------------------------------------------


async def aservers_servable(*, tenant: Tenant) -> dict[str, Server]:
    """The tenant's enabled servers by slug (one query)."""
    return {server.slug: server async for server in Server.objects.filter(tenant_id=tenant.pk, enabled=True)}


def server_get_servable(*, tenant: Tenant, slug: str) -> Server | None:
    """The tenant's enabled server called ``slug``, or None (without a query for what cannot be a slug)."""
    if not _possible_slug(slug):
        return None
    return Server.objects.filter(tenant_id=tenant.pk, slug=slug, enabled=True).first()


def server_scope_vocabulary(*, tenant: Tenant | None) -> set[str]:
    """Every scope some enabled server requires: of ``tenant``, or of every tenant when None."""
    servers = Server.objects.filter(enabled=True).exclude(required_scopes="")
    if tenant is not None:
        servers = servers.filter(tenant_id=tenant.pk)
    return {scope for value in servers.values_list("required_scopes", flat=True).distinct() for scope in value.split()}
