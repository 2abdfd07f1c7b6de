"""Admin for rate limits: a tenant's admins set their own tenant's limits (within the ceiling, if platform staff
set one); platform staff set ceilings, which tenant admins may read but not change. Every write goes through the
services, so web processes hear of it like a catalog change."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from mcp_platform.quotas import services
from mcp_platform.quotas.models import RateCeiling, RateLimit
from tenants.admin.scoping import NOBODY
from tenants.admin.service_backed import ServiceBackedAdmin, ServiceValidatedForm


def _validate_limit(limit: RateLimit) -> None:
    ceiling = RateCeiling.objects.filter(tenant_id=limit.tenant_id).first() if limit.tenant_id else None
    services.rate_limit_validate(limit=limit, ceiling=ceiling)


class TenantFixedAdmin(ServiceBackedAdmin):
    tenant_path = "tenant"
    list_select_related = ("tenant",)
    autocomplete_fields = ["tenant"]

    # The form's fields, in order; the tenant first.
    shown: tuple[str, ...] = ()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return (*self.shown, "updated_at") if obj is not None else self.shown

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # A limit does not move between tenants (the services nudge the tenant it belongs to).
        return ("tenant", "updated_at") if obj is not None else ()


class RateLimitForm(ServiceValidatedForm):
    validator = staticmethod(_validate_limit)

    class Meta:
        model = RateLimit
        fields = ("tenant", "scope", "client_id", "tool_name", "server", "rate", "period", "burst")


@admin.register(RateLimit)
class RateLimitAdmin(TenantFixedAdmin):
    form = RateLimitForm
    shown = ("tenant", *services.RATE_LIMIT_FIELDS)
    fields_for_service = services.RATE_LIMIT_FIELDS
    list_select_related = ("tenant", "server")  # type: ignore[assignment]
    list_display = ("scope", "subject", "allowance", "tenant")
    list_filter = ("scope", "tenant")
    search_fields = ("client_id", "tool_name")

    @admin.display(description="Applies to", ordering="client_id")
    def subject(self, limit: RateLimit) -> str:
        if limit.scope == RateLimit.Scope.CLIENT:
            return limit.client_id or "every client without its own limit"
        if limit.scope == RateLimit.Scope.TOOL:
            return limit.tool_name or "every tool without its own limit"
        if limit.scope == RateLimit.Scope.SERVER:
            return f"requests to the server {limit.server}"
        return "all requests"

    @admin.display(description="Allowance")
    def allowance(self, limit: RateLimit) -> str:
        return f"{limit.rate} {limit.get_period_display()}, {limit.burst} at once"

    def create(self, obj: RateLimit, values: dict[str, Any]) -> RateLimit:
        return services.rate_limit_create(tenant=obj.tenant, **values)

    def update(self, stored: RateLimit, data: dict[str, Any]) -> None:
        services.rate_limit_update(limit=stored, data=data)

    def remove(self, obj: RateLimit) -> None:
        services.rate_limit_delete(limit=obj)


@admin.register(RateCeiling)
class RateCeilingAdmin(TenantFixedAdmin):
    # Tenant admins see their ceiling (the bound their limits must keep); only platform staff set it.
    add_roles = change_roles = delete_roles = NOBODY
    shown = ("tenant", *services.CEILING_FIELDS)
    fields_for_service = services.CEILING_FIELDS
    list_display = ("tenant", "rate", "period", "burst", "updated_at")
    search_fields = ("tenant__slug", "tenant__name")

    def create(self, obj: RateCeiling, values: dict[str, Any]) -> RateCeiling:
        return services.rate_ceiling_set(tenant=obj.tenant, **values)

    def update(self, stored: RateCeiling, data: dict[str, Any]) -> None:
        values = {name: data.get(name, getattr(stored, name)) for name in services.CEILING_FIELDS}
        stored.__dict__.update(services.rate_ceiling_set(tenant=stored.tenant, **values).__dict__)

    def remove(self, obj: RateCeiling) -> None:
        services.rate_ceiling_delete(ceiling=obj)
