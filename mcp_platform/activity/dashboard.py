"""The usage dashboard page of the admin: one tenant's figures (or, for platform staff, every tenant's) over the
last hour, day, week or 30 days, for all its servers or one: calls over time on a time axis, and per tool, client,
server and upstream, each linked to the activity log filtered to it."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from mcp_platform.activity import charts
from mcp_platform.activity.admin import DEFAULT_SERVER, server_value
from mcp_platform.activity.models import ActivityRecord
from mcp_platform.activity.usage import WINDOWS, Bucket, upstream_calls, usage_summary
from tenants.admin.policy import ADMINISTERING, admin_scope
from tenants.admin.scoping import scoped_choices
from tenants.models import Server, Tenant


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
    label, span, _, width = WINDOWS[window]
    since = now - span
    calls = model_admin.get_queryset(request).filter(kind=ActivityRecord.Kind.CALL, at__gte=since)
    scope = admin_scope(request)
    if chosen is not None:
        calls = calls.filter(tenant=chosen)
        tenant_ids: frozenset[int] | None = frozenset({chosen.pk})
    else:
        tenant_ids = None if scope.everything else scope.tenant_ids()
    # One of the chosen tenant's servers ("-": its default one), or all of them ("").
    servers = list(Server.objects.filter(tenant=chosen).order_by("slug")) if chosen is not None else []
    server = request.GET.get("server", "")
    if server not in (DEFAULT_SERVER, *(s.slug for s in servers)):
        server = ""
    if server:
        calls = calls.filter(server="" if server == DEFAULT_SERVER else server)
    upstreams = upstream_calls(tenant_ids=tenant_ids, with_tenant=chosen is None)
    summary = usage_summary(calls, window, now, upstreams)

    log = reverse(f"admin:{model_admin.opts.app_label}_{model_admin.opts.model_name}_changelist")
    base = {"kind__exact": ActivityRecord.Kind.CALL.value}
    if chosen is not None:
        base["tenant__id__exact"] = str(chosen.pk)
    if server:
        base["server"] = server

    def log_of(**params: str) -> str:
        """The activity log filtered to these calls (the dashboard's tenant, calls only)."""
        return f"{log}?{urlencode(base | params)}"

    def bucket_log(bucket: Bucket) -> str:
        start = max(bucket.start, since)
        return log_of(at__gte=start.isoformat(), at__lt=(bucket.start + width).isoformat())

    upstream_pages = {
        upstream.label: reverse("admin:tenants_upstream_change", args=[upstream.upstream_id]) for upstream in upstreams
    }
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Usage" + (f" of {chosen.name}" if chosen else " across tenants"),
        "tenants": tenants,
        "chosen": chosen,
        "servers": servers,
        "server": server,
        "default_server": DEFAULT_SERVER,
        "everything": scope.everything,
        "window": window,
        "window_label": label,
        "windows": [(key, value[0]) for key, value in WINDOWS.items()],
        "summary": summary,
        "totals_text": {
            "calls": charts.counted(summary["totals"]["calls"], "call"),
            "errors": charts.counted(summary["totals"]["errors"], "error"),
        },
        "window_log": log_of(period=window),
        "chart": {
            "width": charts.WIDTH,
            "height": charts.HEIGHT,
            "left": charts.LEFT,
            "right": charts.WIDTH - charts.RIGHT,
            "top": charts.TOP,
            "bottom": charts.HEIGHT - charts.BOTTOM,
            "label_y": charts.HEIGHT - charts.BOTTOM + 16,
            "axis_y": charts.HEIGHT - 2,
        },
        "timeline": charts.timeline(summary["timeline"], window, bucket_log),
        "tools": charts.rows(summary["tools"], lambda usage: log_of(period=window, target=usage.value)),
        "clients": charts.rows(summary["clients"], lambda usage: log_of(period=window, client=usage.value)),
        "server_rows": charts.rows(
            summary["servers"], lambda usage: log_of(period=window, server=server_value(usage.value))
        ),
        "upstreams": charts.rows(summary["upstreams"], lambda usage: upstream_pages[usage.value]),
    }
    return TemplateResponse(request, "admin/activity/usage.html", context)
