"""People's credentials as pages list them (a person's own page, a tenant's admin): each target's title, found for a
whole page of rows at once (one query per kind of target), never a credential's values."""

from __future__ import annotations

from collections.abc import Iterable

from tenants.connections.services import target_title
from tenants.models import OpenApiSource, Tool, Upstream

TARGET_MODELS: dict[str, type[Tool] | type[Upstream] | type[OpenApiSource]] = {
    "upstream": Upstream,
    "openapi": OpenApiSource,
    "tool": Tool,
}


def target_titles(keys: Iterable[tuple[int, str]]) -> dict[tuple[int, str], str]:
    """The title (``services.target_title``) of each (tenant id, target) of ``keys``: "upstream github", "tool
    weather", or "a removed item" where the tenant no longer has it."""
    wanted: dict[str, set[int]] = {}
    distinct = set(keys)
    for _tenant_id, target in distinct:
        kind, _, pk = target.partition(":")
        if kind in TARGET_MODELS and pk.isdigit():
            wanted.setdefault(kind, set()).add(int(pk))
    found: dict[tuple[str, int], Tool | Upstream | OpenApiSource] = {}
    for kind, pks in wanted.items():
        for row in TARGET_MODELS[kind].objects.filter(pk__in=pks).only("pk", "tenant_id", "name"):  # type: ignore[attr-defined]
            found[(kind, row.pk)] = row
    titles = {}
    for tenant_id, target in distinct:
        kind, _, pk = target.partition(":")
        item: Tool | Upstream | OpenApiSource | None = found.get((kind, int(pk))) if pk.isdigit() else None
        # A row of another tenant never names this one's target (ids are global, but checked all the same).
        if item is not None and item.tenant_id != tenant_id:
            item = None
        titles[(tenant_id, target)] = target_title(item)
    return titles
