"""Read-only admin for tool runs: a tenant's admins (and platform staff) see what runs, for whom, and how it ended."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from mcp_platform.jobs.models import ToolRun
from tenants.admin_scoping import TenantScopedAdmin


@admin.register(ToolRun)
class ToolRunAdmin(TenantScopedAdmin):
    list_display = ("id", "tenant", "tool_name", "status", "principal", "created_at", "expires_at")
    list_filter = ("status", "tenant")
    search_fields = ("id", "tool_name", "principal")
    readonly_fields = [field.name for field in ToolRun._meta.fields]
    tenant_path = "tenant"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ToolRun | None = None) -> bool:
        return False
