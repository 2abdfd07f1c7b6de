"""The configuration pages on the tenant admin: export the tenant as a file; import a file (upload, the plan shown,
then Apply). The Apply button carries the file and the digest of the plan shown: the apply makes the plan again and
refuses, showing the new one, when it differs. Another tenant's page is a 404 on each, as the tenant's own page.

The tenant admin serves them: ``CatalogFilesConfig.ready()`` adds ``CONFIGURATION_PAGE`` to
``tenants.admin.pages.tenant_pages``."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, URLResolver, path, reverse

from mcp_infra.addresses import base_url_from_request
from mcp_platform.catalog_files.applying import PlanChanged, configuration_apply, file_label
from mcp_platform.catalog_files.exporting import schema_url, tenant_export
from mcp_platform.catalog_files.loading import MAX_BYTES, ConfigFileError, Problem, size_check
from mcp_platform.catalog_files.planning import Proposal, configuration_plan, file_check
from tenants.admin.pages import ObjectPage
from tenants.bulk_changes import Actor
from tenants.models import Tenant

TEMPLATE = "admin/tenants/tenant/configuration.html"
FILE_NAME_LENGTH = 120


class ConfigurationPages:
    """The configuration pages of the tenant admin ``model_admin``, which decides who may see (export) and change
    (import) a tenant, as on the tenant's own page."""

    def __init__(self, model_admin: admin.ModelAdmin[Any]) -> None:
        self.model_admin = model_admin

    def get_urls(self) -> list[URLPattern | URLResolver]:
        wrap = self.model_admin.admin_site.admin_view
        return [
            path("<path:object_id>/configuration/", wrap(self.page_view), name="tenants_tenant_configuration"),
            path(
                "<path:object_id>/configuration/export/",
                wrap(self.export_view),
                name="tenants_tenant_configuration_export",
            ),
            path(
                "<path:object_id>/configuration/apply/",
                wrap(self.apply_view),
                name="tenants_tenant_configuration_apply",
            ),
        ]

    def _tenant(self, request: HttpRequest, object_id: str, *, change: bool) -> Tenant:
        """The tenant, if the person may see it (``change``: and change it). Raises Http404 or PermissionDenied."""
        tenant: Tenant | None = self.model_admin.get_object(request, object_id)
        if tenant is None:
            raise Http404("No such tenant.")
        allowed = self.model_admin.has_change_permission if change else self.model_admin.has_view_permission
        if not allowed(request, tenant):
            raise PermissionDenied
        return tenant

    def _render(self, request: HttpRequest, tenant: Tenant, **extra: Any) -> HttpResponse:
        context = {
            **self.model_admin.admin_site.each_context(request),
            "title": f"Configuration of {tenant.slug}",
            "opts": self.model_admin.opts,
            "original": tenant,
            "tenant": tenant,
            "may_import": self.model_admin.has_change_permission(request, tenant),
            "max_megabytes": MAX_BYTES // (1024 * 1024),
            "schema_url": schema_url(base_url_from_request(request)),
            **extra,
        }
        return TemplateResponse(request, TEMPLATE, context)

    def _plan_page(
        self, request: HttpRequest, tenant: Tenant, proposal: Proposal, text: str, name: str, **extra: Any
    ) -> HttpResponse:
        exported_from = proposal.loaded.data.get("tenant")
        return self._render(
            request,
            tenant,
            plan=proposal.plan,
            digest=proposal.plan.digest(),
            content=text,
            file_name=name,
            other_tenant=exported_from if exported_from and exported_from != tenant.slug else "",
            **extra,
        )

    def page_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """GET: the export link and the import form. POST (the form): the uploaded file's plan, or its problems."""
        tenant = self._tenant(request, object_id, change=request.method == "POST")
        if request.method == "GET":
            return self._render(request, tenant)
        if request.method != "POST":
            return HttpResponseNotAllowed(["GET", "POST"])
        upload = request.FILES.get("file")
        if upload is None:
            return self._render(request, tenant, problems=[Problem(None, (), "choose a file to import")])
        name = (upload.name or "")[:FILE_NAME_LENGTH]
        try:
            if upload.size is not None:
                size_check(upload.size)  # refused unread
            loaded = file_check(upload.read())
            proposal = configuration_plan(tenant=tenant, loaded=loaded)
        except ConfigFileError as exc:
            return self._render(request, tenant, problems=exc.problems, file_name=name)
        return self._plan_page(request, tenant, proposal, loaded.text, name)

    def export_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        tenant = self._tenant(request, object_id, change=False)
        if request.method != "GET":
            return HttpResponseNotAllowed(["GET"])
        text = tenant_export(tenant, base_url=base_url_from_request(request))
        response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{tenant.slug}.tenant.yaml"'
        response["Cache-Control"] = "no-store"
        return response

    def apply_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST (the Apply button): the file and the digest of the plan shown; applied if the plan is still that."""
        tenant = self._tenant(request, object_id, change=True)
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        text = request.POST.get("content", "")
        digest = request.POST.get("plan", "")
        name = request.POST.get("file_name", "")[:FILE_NAME_LENGTH]
        try:
            loaded = file_check(text)
            report = configuration_apply(
                tenant=tenant,
                loaded=loaded,
                actor=Actor.person(request.user),
                source=file_label(name) if name else "a file imported on the admin page",
                reviewed=digest,
            )
        except ConfigFileError as exc:
            return self._render(request, tenant, problems=exc.problems, file_name=name)
        except PlanChanged as exc:
            changed = "The tenant changed since the plan was shown: nothing was applied. Read the new plan."
            return self._plan_page(request, tenant, exc.proposal, text, name, plan_changed=changed)
        messages.success(request, f"Configuration applied: {report.proposal.plan.summary()}")
        for note in report.notes:
            messages.warning(request, note)
        return HttpResponseRedirect(reverse("admin:tenants_tenant_change", args=[tenant.pk]))


CONFIGURATION_PAGE = ObjectPage(
    label="Configuration",
    url_name="tenants_tenant_configuration",
    urls=lambda model_admin: ConfigurationPages(model_admin).get_urls(),
)
