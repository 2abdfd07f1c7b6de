"""Admin for tool runs: a tenant's admins (and platform staff) see what runs, for whom, and how it ended, watch
status, progress and status message change while a run works (the page polls a small JSON endpoint), filter by
tool, status and principal, and cancel runs that have not finished, in bulk or from a run's page.

What only the platform needs to run a task (its generation, lease, takeovers, quota key, ...) is shown to platform
staff alone, in a collapsed "Internals" section of a run's page."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect, JsonResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from mcp_platform.jobs.models import ToolRun
from mcp_platform.jobs.selectors import TERMINAL_STATUSES, Caller
from mcp_platform.jobs.services import tool_run_cancel
from tenants.admin.policy import admin_scope
from tenants.admin.principals import PrincipalFilter, PrincipalsNamed
from tenants.admin.scoping import TenantScopedAdmin

# The changelist asks for the runs it shows (one page, 100 at most by default).
MAX_LIVE_IDS = 200
CANCELLED_IN_ADMIN = "Cancelled in the admin"
LIVE_FIELDS = ("status", "status_message", "progress", "progress_total", "progress_message")
# A run's page for everyone who may see it: what ran, for whom, when, how long and with what outcome.
RUN_FIELDS = (
    "tool_name",
    "tenant",
    "principal_person",
    "client",
    "protocol_version",
    "created_at",
    "finished_at",
    "duration",
    "expires_at",
    "arguments_shown",
    "result_shown",
    "error_shown",
)
# How the platform runs a task (restarts, leases, the allowance it counts against, the questions in flight): for
# platform staff only, never for a tenant's admins.
INTERNAL_FIELDS = (
    "id",
    "session_id",
    "quota_key",
    "generation",
    "attempts",
    "scheduled_at",
    "lease_until",
    "takeovers",
    "ttl_ms",
    "updated_at",
    "log_level",
    "progress_token",
    "client_capabilities",
    "input_requests",
    "input_answers",
    "upstream_task",
    "origin",
)
RUNNING = "running"


def run_live_state(run: ToolRun, *, may_cancel: bool) -> dict[str, Any]:
    """What the admin's pages show of a run and update while it works."""
    finished = run.status in TERMINAL_STATUSES
    return {
        "status": run.status,
        "statusLabel": run.get_status_display(),
        "statusMessage": run.status_message,
        "progress": run.progress,
        "total": run.progress_total,
        "progressMessage": run.progress_message,
        "finished": finished,
        "cancellable": may_cancel and not finished,
        "duration": run_duration(run),
    }


def duration_label(seconds: float) -> str:
    """``412 ms``, ``5.8 s``, ``3 min 20 s``: a run's duration as a person reads it."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def run_duration(run: ToolRun) -> str:
    """How long the run took, from the call that created it to its terminal status (``finished_at``, as the jobs
    app records it); "running" while it has not finished; "—" for a run that ended before finish times were kept."""
    if run.status not in TERMINAL_STATUSES:
        return RUNNING
    if run.finished_at is None:
        return "—"
    return duration_label((run.finished_at - run.created_at).total_seconds())


def _json_block(value: Any) -> str:
    if value in (None, {}, []):
        return "—"
    return format_html('<pre class="run-json">{}</pre>', json.dumps(value, indent=2, sort_keys=True, default=str))


def progress_label(run: ToolRun) -> str:
    if run.progress is None:
        return ""
    done = f"{run.progress:g}"
    return f"{done} of {run.progress_total:g}" if run.progress_total else done


@admin.register(ToolRun)
class ToolRunAdmin(PrincipalsNamed, TenantScopedAdmin):
    # Short columns that fit 1,400 px beside the menu and the filters: the run's id cut to its start (the link holds
    # it all), its status, progress and status message in one column, its start as day and time.
    list_display = ("run", "tenant", "tool_name", "live_state", "principal_person", "started", "live_duration")
    list_display_links = ("run",)
    list_filter = ("status", "tenant", "tool_name", PrincipalFilter)
    search_fields = ("id", "tool_name", "principal")
    readonly_fields = (*RUN_FIELDS, *INTERNAL_FIELDS)
    actions = ["cancel_runs"]
    tenant_path = "tenant"

    class Media:
        css = {"all": ("admin-tool-runs.css",)}
        js = ("admin-tool-runs.js",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ToolRun | None = None) -> bool:
        return False

    def has_cancel_permission(self, request: HttpRequest, obj: ToolRun | None = None) -> bool:
        return self._allowed(request, self.change_roles, obj)

    def get_urls(self) -> list[Any]:
        live = self.admin_site.admin_view(self.live_view)
        cancel = self.admin_site.admin_view(self.cancel_view)
        return [
            path("live/", live, name="jobs_toolrun_live"),
            path("<path:object_id>/cancel/", cancel, name="jobs_toolrun_cancel"),
            *super().get_urls(),
        ]

    # Cells the page's script (admin-tool-runs.js) updates in place: each names its run and what it shows.
    def _cell(self, run: ToolRun, field: str, content: Any, **data: str) -> str:
        extra = format_html_join("", ' data-run-{}="{}"', data.items())
        return format_html('<span data-run="{}" data-run-field="{}"{}>{}</span>', run.pk, field, extra, content)

    def get_list_display(self, request: HttpRequest) -> Any:
        # Someone who administers one tenant learns nothing from a tenant column: the room goes to the others.
        scope = admin_scope(request)
        if not scope.everything and len(scope.tenant_ids()) == 1:
            return tuple(field for field in self.list_display if field != "tenant")
        return self.list_display

    def get_fieldsets(self, request: HttpRequest, obj: ToolRun | None = None) -> Any:
        # What changes while a run works is shown once, in the live panel at the top of its page.
        fieldsets: list[tuple[str | None, dict[str, Any]]] = [(None, {"fields": RUN_FIELDS})]
        if admin_scope(request).everything:
            fieldsets.append(
                (
                    "Internals",
                    {
                        "fields": INTERNAL_FIELDS,
                        "classes": ("collapse",),
                        "description": "How the platform runs this task: for platform staff only.",
                    },
                )
            )
        return fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: ToolRun | None = None) -> Any:
        return RUN_FIELDS if not admin_scope(request).everything else self.readonly_fields

    @admin.display(description="run", ordering="id")
    def run(self, run: ToolRun) -> str:
        return Truncator(run.pk).chars(9)

    @admin.display(description="client")
    def client(self, run: ToolRun) -> str:
        origin = run.origin if isinstance(run.origin, dict) else {}
        return f"{origin.get('client_name', '')} {origin.get('client_version', '')}".strip() or "—"

    @admin.display(description="duration", ordering="finished_at")
    def duration(self, run: ToolRun) -> str:
        return run_duration(run)

    @admin.display(description="duration", ordering="finished_at")
    def live_duration(self, run: ToolRun) -> str:
        return self._cell(run, "duration", run_duration(run))

    @admin.display(description="arguments")
    def arguments_shown(self, run: ToolRun) -> str:
        return _json_block(run.arguments)

    @admin.display(description="result")
    def result_shown(self, run: ToolRun) -> str:
        return _json_block(run.result)

    @admin.display(description="error")
    def error_shown(self, run: ToolRun) -> str:
        return _json_block(run.error)

    @admin.display(description="started", ordering="created_at")
    def started(self, run: ToolRun) -> str:
        return date_format(timezone.localtime(run.created_at), "j M H:i")

    @admin.display(description="status", ordering="status")
    def live_state(self, run: ToolRun) -> str:
        return format_html(
            '{}<span class="run-list-progress">{}</span><span class="run-list-message">{}</span>',
            self.live_status(run),
            self.live_progress(run),
            self.live_message(run),
        )

    def live_status(self, run: ToolRun) -> str:
        finished = "1" if run.status in TERMINAL_STATUSES else "0"
        live = reverse("admin:jobs_toolrun_live")
        return self._cell(run, "status", run.get_status_display(), finished=finished, **{"live-url": live})

    def live_progress(self, run: ToolRun) -> str:
        label = f"Progress of {run.tool_name}"
        bar = (
            format_html(
                '<progress max="{}" value="{}" aria-label="{}"></progress> ', run.progress_total, run.progress, label
            )
            if run.progress is not None and run.progress_total
            else ""
        )
        return self._cell(run, "progress", format_html("{}{}", bar, progress_label(run)), label=label)

    def live_message(self, run: ToolRun) -> str:
        return self._cell(run, "status_message", run.status_message)

    def live_view(self, request: HttpRequest) -> JsonResponse:
        """GET ``?id=<run id>&id=...`` -> ``{"runs": {id: state}}`` for those of the runs the person may see (others
        are simply absent)."""
        ids = request.GET.getlist("id")[:MAX_LIVE_IDS]
        may_cancel = self.has_cancel_permission(request)
        runs = self.get_queryset(request).filter(pk__in=ids)
        return JsonResponse({"runs": {run.pk: run_live_state(run, may_cancel=may_cancel) for run in runs}})

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST: cancel this run (the Cancel button of its page), then back to that page."""
        # The id arrives quoted as the admin quotes ids in URLs ("_" is "_5F"); another tenant's run is a 404.
        run: ToolRun = self.get_object(request, unquote(object_id))
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_cancel_permission(request, run):
            raise PermissionDenied
        cancelled = self._cancel(run)
        if cancelled:
            self.message_user(request, "The run was cancelled; a worker running it is told to stop.", messages.SUCCESS)
        else:
            self.message_user(request, "The run had already finished or expired.", messages.WARNING)
        return HttpResponseRedirect(reverse("admin:jobs_toolrun_change", args=[quote(run.pk)]))

    def _cancel(self, run: ToolRun) -> bool:
        # As the run's own caller, so the service's rules (and its worker signal) apply unchanged.
        caller = Caller(
            tenant_id=run.tenant_id,
            principal=run.principal,
            session_id=run.session_id,
            protocol_version=run.protocol_version,
        )
        outcome = tool_run_cancel(caller=caller, task_id=run.pk, reason=CANCELLED_IN_ADMIN)
        return bool(outcome and outcome[1])

    def object_page_context(self, request: HttpRequest, obj: ToolRun) -> dict[str, Any]:
        return {
            "run_live": run_live_state(obj, may_cancel=self.has_cancel_permission(request, obj)),
            "run_progress_label": progress_label(obj),
        }

    # The queryset is the scoped one: only runs of administered tenants are cancelled.
    @admin.action(description="Cancel the selected runs (a worker running one is told to stop)", permissions=["cancel"])
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[ToolRun]) -> None:
        cancelled = sum(self._cancel(run) for run in queryset)
        skipped = len(queryset) - cancelled
        self.message_user(
            request,
            f"{cancelled} run(s) cancelled" + (f"; {skipped} had already finished or expired." if skipped else "."),
            level=messages.SUCCESS if cancelled else messages.WARNING,
        )
