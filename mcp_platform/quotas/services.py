"""Writes of rate limits and ceilings. Each write bumps the tenant's revision in its transaction and, after
commit, nudges every web process (``tenants.events.tenant_changed``), so their copies of the limits are renewed
as the tenant cache's are. A limit's writes leave a version in the catalog's history (``tenants.history``; the
ceiling, platform staff's, is not versioned)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from mcp_platform.quotas.models import MAX_BURST, MAX_RATE, RateCeiling, RateLimit
from tenants.events import tenant_changed
from tenants.history.revisions import catalog_revision, note_added, note_change, note_deleted
from tenants.models import Server, Tenant

RATE_LIMIT_FIELDS = ("scope", "client_id", "tool_name", "server", "rate", "period", "burst")
CEILING_FIELDS = ("rate", "period", "burst")


def _allowance_errors(*, rate: int, period: int, burst: int) -> dict[str, str]:
    errors: dict[str, str] = {}
    if not 1 <= rate <= MAX_RATE:
        errors["rate"] = f"Between 1 and {MAX_RATE}."
    if not 1 <= burst <= MAX_BURST:
        errors["burst"] = f"Between 1 and {MAX_BURST}."
    if period <= 0:
        errors["period"] = "Choose a period."
    return errors


def rate_limit_validate(*, limit: RateLimit, ceiling: RateCeiling | None) -> None:
    """Raise ``ValidationError`` (by field) unless ``limit`` is well formed and within ``ceiling``."""
    errors = _allowance_errors(rate=limit.rate, period=limit.period, burst=limit.burst)
    if limit.scope not in RateLimit.Scope.values:
        errors["scope"] = "Choose a scope."
    if limit.client_id and limit.scope != RateLimit.Scope.CLIENT:
        errors["client_id"] = "Only a client limit names a client."
    if limit.tool_name and limit.scope != RateLimit.Scope.TOOL:
        errors["tool_name"] = "Only a tool limit names a tool."
    if limit.server_id is not None and limit.scope != RateLimit.Scope.SERVER:
        errors["server"] = "Only a server limit names a server."
    elif limit.scope == RateLimit.Scope.SERVER and limit.server_id is None:
        errors["server"] = "Choose the server whose requests this limit counts."
    elif limit.server is not None and limit.server.tenant_id != limit.tenant_id:
        errors["server"] = "Choose one of this tenant's servers."
    # Compared as requests per second: a limit per hour may be generous per minute and still be within it.
    within_rate = ceiling is None or limit.rate * ceiling.period <= ceiling.rate * limit.period
    if ceiling is not None and not within_rate and "rate" not in errors and "period" not in errors:
        errors["rate"] = (
            f"Above this tenant's ceiling of {ceiling.rate} {ceiling.get_period_display()} "
            "(set by the platform's staff)."
        )
    if ceiling is not None and "burst" not in errors and limit.burst > ceiling.burst:
        errors["burst"] = f"Above this tenant's ceiling of {ceiling.burst} at once (set by the platform's staff)."
    if errors:
        raise ValidationError(errors)


def _ceiling_of(tenant_id: int) -> RateCeiling | None:
    return RateCeiling.objects.filter(tenant_id=tenant_id).first()


def rate_limit_create(
    *,
    tenant: Tenant,
    scope: str,
    rate: int,
    period: int,
    burst: int,
    client_id: str = "",
    tool_name: str = "",
    server: Server | None = None,
) -> RateLimit:
    """Add a limit to the tenant's endpoint (``server``: of a server scope, the named server it limits). Raises
    ``ValidationError``."""
    limit = RateLimit(
        tenant=tenant,
        scope=scope,
        client_id=client_id,
        tool_name=tool_name,
        server=server,
        rate=rate,
        period=period,
        burst=burst,
    )
    with catalog_revision():
        rate_limit_validate(limit=limit, ceiling=_ceiling_of(tenant.pk))
        limit.full_clean()
        limit.save()
        note_added(limit)
        tenant_changed(tenant_id=tenant.pk)
    return limit


def rate_limit_update(*, limit: RateLimit, data: Mapping[str, Any]) -> RateLimit:
    """Change a limit's fields (those of ``RATE_LIMIT_FIELDS`` in ``data``). Raises ``ValidationError``."""
    unknown = set(data) - set(RATE_LIMIT_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown fields: {', '.join(sorted(unknown))}")
    changed = {name for name, value in data.items() if getattr(limit, name) != value}
    for name, value in data.items():
        setattr(limit, name, value)
    with catalog_revision():
        rate_limit_validate(limit=limit, ceiling=_ceiling_of(limit.tenant_id))
        limit.full_clean()
        limit.save()
        note_change(limit, changed)
        tenant_changed(tenant_id=limit.tenant_id)
    return limit


def rate_limit_delete(*, limit: RateLimit) -> None:
    with catalog_revision():
        tenant_id = limit.tenant_id
        note_deleted(limit)
        limit.delete()
        tenant_changed(tenant_id=tenant_id)


def rate_ceiling_set(*, tenant: Tenant, rate: int, period: int, burst: int) -> RateCeiling:
    """Set (or replace) the tenant's ceiling; platform staff only (the admin asks). Limits already above it stay
    stored, but the ceiling's own bucket holds the tenant to it. Raises ``ValidationError``."""
    errors = _allowance_errors(rate=rate, period=period, burst=burst)
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        ceiling, _ = RateCeiling.objects.update_or_create(
            tenant=tenant, defaults={"rate": rate, "period": period, "burst": burst}
        )
        tenant_changed(tenant_id=tenant.pk)
    return ceiling


def rate_ceiling_delete(*, ceiling: RateCeiling) -> None:
    with transaction.atomic():
        tenant_id = ceiling.tenant_id
        ceiling.delete()
        tenant_changed(tenant_id=tenant_id)
