"""Admin for tool runs: a tenant's admins (and platform staff) see what runs, for whom, and how it ended, filter
by tool, status and principal, and cancel runs that have not finished."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from mcp_platform.jobs.models import ToolRun
from mcp_platform.jobs.selectors import Caller
from mcp_platform.jobs.services import tool_run_cancel
from tenants.admin_scoping import TenantScopedAdmin


@admin.register(ToolRun)
class ToolRunAdmin(TenantScopedAdmin):
    list_display = ("id", "tenant", "tool_name", "status", "status_message", "principal", "created_at", "expires_at")
    list_filter = ("status", "tenant", "tool_name", "principal")
    search_fields = ("id", "tool_name", "principal")
    readonly_fields = [field.name for field in ToolRun._meta.fields]
    actions = ["cancel_runs"]
    tenant_path = "tenant"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ToolRun | None = None) -> bool:
        return False

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return self._allowed(request, self.change_roles, None)

    # The queryset is the scoped one: only runs of administered tenants are cancelled.
    @admin.action(description="Cancel the selected runs (a worker running one is told to stop)", permissions=["cancel"])
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[ToolRun]) -> None:
        cancelled = 0
        for run in queryset:
            # As the run's own caller, so the service's rules (and its worker signal) apply unchanged.
            caller = Caller(
                tenant_id=run.tenant_id,
                principal=run.principal,
                session_id=run.session_id,
                protocol_version=run.protocol_version,
            )
            outcome = tool_run_cancel(caller=caller, task_id=run.pk, reason="Cancelled in the admin")
            cancelled += bool(outcome and outcome[1])
        skipped = len(queryset) - cancelled
        self.message_user(
            request,
            f"{cancelled} run(s) cancelled" + (f"; {skipped} had already finished or expired." if skipped else "."),
            level=messages.SUCCESS if cancelled else messages.WARNING,
        )
