"""The usage dashboard page of the admin: one tenant's figures (or, for platform staff, every tenant's) over the
last hour, day or 30 days, as SVG charts with tables of the same figures."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from mcp_platform.activity import charts
from mcp_platform.activity.models import ActivityRecord
from mcp_platform.activity.usage import WINDOWS, usage_summary
from tenants.admin.policy import ADMINISTERING, admin_scope
from tenants.admin.scoping import scoped_choices
from tenants.models import Tenant

TIME_FORMATS = {"1h": "%H:%M", "24h": "%d %b %H:00", "30d": "%d %b"}


def usage_page(request: HttpRequest, model_admin: Any) -> HttpResponse:
    """Raises ``Http404`` for a tenant the person does not administer (as for any other row of another tenant)."""
    window = request.GET.get("window", "24h")
    if window not in WINDOWS:
        window = "24h"
    tenants = list(scoped_choices(Tenant.objects.order_by("slug"), request, model_admin.admin_site, ADMINISTERING))
    chosen: Tenant | None = None
    raw = request.GET.get("tenant", "")
    if raw:
        chosen = next((t for t in tenants if str(t.pk) == raw), None)
        if chosen is None:
            raise Http404("No such tenant.")
    elif len(tenants) == 1:
        chosen = tenants[0]
    now = timezone.now()
    label, span, _, _ = WINDOWS[window]
    calls = model_admin.get_queryset(request).filter(kind=ActivityRecord.Kind.CALL, at__gte=now - span)
    if chosen is not None:
        calls = calls.filter(tenant=chosen)
    summary = usage_summary(calls, window, now)
    tool_calls = charts.calls_rows(summary["tools"])
    tool_latency = charts.latency_rows(summary["tools"])
    client_calls = charts.calls_rows(summary["clients"])
    client_latency = charts.latency_rows(summary["clients"])
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Usage" + (f" of {chosen.name}" if chosen else " across tenants"),
        "tenants": tenants,
        "chosen": chosen,
        "everything": admin_scope(request).everything,
        "window": window,
        "window_label": label,
        "windows": [(key, value[0]) for key, value in WINDOWS.items()],
        "summary": summary,
        "chart": {
            "width": charts.WIDTH,
            "height": charts.HEIGHT,
            "bar": charts.BAR_HEIGHT,
            "label": charts.LABEL_WIDTH,
        },
        "timeline": charts.timeline_columns(summary["timeline"], TIME_FORMATS[window]),
        "tool_calls": tool_calls,
        "tool_latency": tool_latency,
        "client_calls": client_calls,
        "client_latency": client_latency,
        "tools_height": charts.rows_height(tool_calls),
        "clients_height": charts.rows_height(client_calls),
    }
    return TemplateResponse(request, "admin/activity/usage.html", context)
