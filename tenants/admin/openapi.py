"""Admin for OpenAPI sources: the import page (read a document by URL or upload, preview its operations, pick which
to import), re-import from the same location, and deletion that takes the source's tools along."""

from __future__ import annotations

import base64
import binascii
import gzip
import io
from typing import Any

from asgiref.sync import async_to_sync
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from tenants.admin.scoping import TenantScopedAdmin
from tenants.bulk_changes import Actor
from tenants.models import OpenApiSource, Tenant, Tool
from tenants.openapi.document import MAX_DOCUMENT_BYTES, OpenApiDocument, OpenApiError, document_parse
from tenants.openapi.fetching import document_fetch_once
from tenants.openapi.importing import openapi_import, openapi_source_delete
from tenants.openapi.translate import ImportOptions, Translation, document_translate


class SourceForm(forms.Form):
    tenant = forms.ModelChoiceField(Tenant.objects.all())
    url = forms.URLField(required=False, label="Document URL", assume_scheme="https", max_length=2048)
    file = forms.FileField(required=False, label="Or a document file", help_text="JSON or YAML, OpenAPI 3.0 or 3.1.")
    # Not "prefix": a form's own attribute of that name prefixes its field names.
    tool_prefix = forms.CharField(
        required=False, max_length=64, label="Prefix", help_text="Put before every tool name, e.g. petstore_."
    )
    base_url = forms.URLField(
        required=False, assume_scheme="https", label="Base URL", help_text="Overrides the document's servers."
    )
    secret_name = forms.CharField(
        required=False, max_length=64, label="Secret", help_text="The tenant secret the tools authenticate with."
    )
    client_id = forms.CharField(
        required=False, max_length=255, label="Client ID", help_text="OAuth 2.0 client credentials only."
    )
    name = forms.CharField(required=False, max_length=200, help_text="Default: the document's title.")
    # Set by the preview: what was previewed (gzip, base64) and where it came from, so the import stores exactly it.
    document = forms.CharField(required=False, widget=forms.HiddenInput)
    location = forms.CharField(required=False, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not cleaned.get("document") and bool(cleaned.get("url")) == bool(cleaned.get("file")):
            raise forms.ValidationError("Give the document's URL or upload its file (one of the two).")
        return cleaned

    def options(self) -> ImportOptions:
        data = self.cleaned_data
        return ImportOptions(
            prefix=data["tool_prefix"],
            base_url=data["base_url"] or None,
            secret_name=data["secret_name"] or None,
            client_id=data["client_id"] or None,
        )


def _pack(content: bytes) -> str:
    return base64.b64encode(gzip.compress(content)).decode("ascii")


def _unpack(packed: str) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(base64.b64decode(packed, validate=True))) as stream:
            content = stream.read(MAX_DOCUMENT_BYTES + 1)
    except (binascii.Error, OSError, EOFError):
        raise OpenApiError("the previewed document was damaged on its way back; preview again") from None
    return content


def _read(form: SourceForm) -> tuple[bytes, str]:
    """The document's bytes and location, from the preview's copy, the URL (through the door) or the upload."""
    data = form.cleaned_data
    if data["document"]:
        return _unpack(data["document"]), data["location"]
    if data["url"]:
        return async_to_sync(document_fetch_once)(data["url"], tenant_id=data["tenant"].pk), data["url"]
    upload = data["file"]
    if upload.size > MAX_DOCUMENT_BYTES:
        raise OpenApiError(f"{upload.name}: the document is {upload.size} bytes; the limit is {MAX_DOCUMENT_BYTES}")
    return upload.read(), upload.name


def _rows(tenant: Tenant, document: OpenApiDocument, translation: Translation) -> dict[str, Any]:
    source = OpenApiSource.objects.filter(tenant=tenant, location=document.location).first()
    ours = set(Tool.objects.filter(openapi_source=source).values_list("name", flat=True)) if source else set()
    others = set(Tool.objects.filter(tenant=tenant).exclude(name__in=ours).values_list("name", flat=True))
    rows = []
    for plan in translation.tools:
        method, _, route = plan.key.partition(" ")
        status = "update" if plan.name in ours else ("name taken" if plan.name in others else "new")
        hints = plan.fields["annotations"] or {}
        rows.append(
            {
                "key": plan.key,
                "method": method,
                "route": route,
                "name": plan.name,
                "title": plan.fields["title"] or plan.fields["description"].splitlines()[0],
                "status": status,
                "hint": "read-only" if hints.get("readOnlyHint") else ("destructive" if hints else ""),
                "arguments": len(plan.fields["input_schema"].get("properties", {})),
            }
        )
    vanishing = sorted(ours - {plan.name for plan in translation.tools})
    return {"rows": rows, "vanishing": vanishing, "reimport": source is not None}


@admin.register(OpenApiSource)
class OpenApiSourceAdmin(TenantScopedAdmin):
    tenant_path = "tenant"
    list_display = ("name", "tenant", "location", "prefix", "tool_count", "imported_at")
    list_filter = ("tenant",)
    search_fields = ("name", "location", "tenant__slug")
    list_select_related = ("tenant",)
    readonly_fields = (
        *("tenant", "name", "location", "prefix", "base_url", "secret_name", "client_id"),
        *("document_sha256", "imported_at", "tool_count"),
    )
    actions = ["import_again"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[OpenApiSource]:
        return super().get_queryset(request).annotate(tools_made=Count("tools"))

    @admin.display(description="Tools")
    def tool_count(self, obj: Any) -> int:
        return int(getattr(obj, "tools_made", 0))

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view(self.import_view)
        return [path("import/", view, name="tenants_openapisource_import"), *super().get_urls()]

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None) -> HttpResponse:
        return HttpResponseRedirect(reverse("admin:tenants_openapisource_import"))

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a source changes by importing it again

    def delete_model(self, request: HttpRequest, obj: OpenApiSource) -> None:
        openapi_source_delete(source=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[OpenApiSource]) -> None:
        for source in queryset:
            openapi_source_delete(source=source)

    @admin.action(description="Import again from the same URL")
    def import_again(self, request: HttpRequest, queryset: QuerySet[OpenApiSource]) -> None:
        for source in queryset.select_related("tenant"):
            options = ImportOptions(
                prefix=source.prefix,
                base_url=source.base_url or None,
                secret_name=source.secret_name or None,
                client_id=source.client_id or None,
            )
            try:
                content = async_to_sync(document_fetch_once)(source.location, tenant_id=source.tenant_id)
                document = document_parse(content, location=source.location)
                report = openapi_import(
                    tenant=source.tenant,
                    document=document,
                    options=options,
                    name=source.name,
                    actor=Actor.person(request.user),
                )
            except OpenApiError as exc:
                self.message_user(request, f"{source.name}: nothing changed: {exc}", level=messages.ERROR)
                continue
            self.message_user(request, report.summary(), level=messages.SUCCESS)

    def import_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        context: dict[str, Any] = {**self.admin_site.each_context(request), "opts": self.model._meta}
        context["title"] = "Import an OpenAPI document"
        if request.method != "POST":
            form = SourceForm(initial={"tenant": request.GET.get("tenant")})
            self.scope_form(request, form)
            return TemplateResponse(request, "admin/tenants/openapisource/import.html", {**context, "form": form})
        form = SourceForm(request.POST, request.FILES)
        self.scope_form(request, form)  # a tenant admin imports only into a tenant they administer
        if form.is_valid():
            try:
                return self._preview_or_import(request, form, context)
            except OpenApiError as exc:
                form.add_error(None, str(exc))
        return TemplateResponse(request, "admin/tenants/openapisource/import.html", {**context, "form": form})

    def _preview_or_import(self, request: HttpRequest, form: SourceForm, context: dict[str, Any]) -> HttpResponse:
        tenant: Tenant = form.cleaned_data["tenant"]
        content, location = _read(form)
        document = document_parse(content, location=location)
        if "_import" in request.POST and form.cleaned_data["document"]:
            # The form names the operations left out, not those kept: a document of a thousand operations would
            # otherwise post more fields than Django accepts (DATA_UPLOAD_MAX_NUMBER_FIELDS).
            left_out = set(request.POST.getlist("leave_out"))
            keys = [plan.key for plan in document_translate(document, form.options()).tools]
            selected = [key for key in keys if key not in left_out]
            if not selected:
                raise OpenApiError("every operation was left out: nothing to import")
            report = openapi_import(
                tenant=tenant,
                document=document,
                options=form.options(),
                name=form.cleaned_data["name"],
                select=selected,
                actor=Actor.person(request.user),
            )
            for warning in report.warnings:
                self.message_user(request, warning, level=messages.WARNING)
            self.message_user(request, report.summary(), level=messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:tenants_openapisource_change", args=[report.source.pk]))
        translation = document_translate(document, form.options())
        preview = SourceForm(
            initial={**form.cleaned_data, "tenant": tenant.pk, "document": _pack(content), "location": location}
        )
        self.scope_form(request, preview)
        context.update(
            form=preview,
            document=document,
            translation=translation,
            operations_count=len(translation.tools) + len(translation.skipped),
            **_rows(tenant, document, translation),
        )
        return TemplateResponse(request, "admin/tenants/openapisource/import.html", context)
