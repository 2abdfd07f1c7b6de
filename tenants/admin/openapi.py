"""Admin for OpenAPI sources: the import page (read a document by URL or upload, say whom the tools act as, preview
its operations, tick those to import, review what would be added, changed and removed, then import), importing a
source again through the same review (with what it was imported with; or, for a source that holds changes,
recording them for the Review changes page of ``tenants.admin.held_changes``), and deletion that takes the
source's tools along."""

from __future__ import annotations

import base64
import binascii
import gzip
import io
from collections.abc import Collection
from typing import Any

from asgiref.sync import async_to_sync
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from tenants.admin.acting_auth import (
    acting_field_names,
    acting_fields,
    acting_split,
    machine_shared,
    personal_config,
    personal_errors,
)
from tenants.admin.held_changes import held_changes_view, openapi_held_source
from tenants.admin.scoping import TenantScopedAdmin
from tenants.admin.secret_picker import secret_name_field, secret_names_offer, secrets_refuse_missing
from tenants.bulk_changes import Actor
from tenants.connections.flow import target_auth
from tenants.models import ChangePolicy, OpenApiSource, Tenant
from tenants.openapi.document import MAX_DOCUMENT_BYTES, OpenApiError, document_parse
from tenants.openapi.fetching import document_fetch_once
from tenants.openapi.importing import (
    ImportDiff,
    OperationDiff,
    openapi_import,
    openapi_import_diff,
    openapi_source_delete,
)
from tenants.openapi.translate import ImportOptions, Translation, document_translate
from tenants.pinning.ledger import pending_count

SOURCE_FIELDS = ("tenant", "url", "file", "tool_prefix", "base_url", "name")
ACTING_FIELDS = acting_field_names("", upstream=False)
SHARED_FIELDS = ("secret_name", "client_id")
FIELD_GROUPS = (
    (None, "", SOURCE_FIELDS),
    (
        "Acts as",
        "Whom the tools' calls act as: the tenant, with the shared credentials below; or each person calling, with "
        "their own OAuth connection, API key or a token exchanged for theirs (all the source's tools share one "
        "connection per person). Fill in the fields of the kind chosen.",
        ACTING_FIELDS,
    ),
    (
        "Shared credentials",
        "The tenant's secret, used by the scheme the document's security requirements name: every call's when the "
        "tools act as the tenant, machine clients' when they act as each person and may use it.",
        SHARED_FIELDS,
    ),
    (
        "Changes at re-import",
        "Accept: a re-import applies what it adds, changes and removes. Hold: it records them for review, and the "
        "approved tools keep being served meanwhile.",
        ("change_policy", "withhold_incompatible"),
    ),
)


class SourceForm(acting_fields("", upstream=False), forms.Form):  # type: ignore[misc]
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
    secret_name = secret_name_field("The tenant's secret the tools authenticate with (Secrets in the admin).")
    client_id = forms.CharField(
        required=False, max_length=255, label="Client ID", help_text="OAuth 2.0 client credentials only."
    )
    name = forms.CharField(required=False, max_length=200, help_text="Default: the document's title.")
    # Not required: a form that does not send it (an older page, a script) keeps the source's settings.
    change_policy = forms.ChoiceField(
        choices=ChangePolicy.choices,
        required=False,
        initial=ChangePolicy.ACCEPT,
        label="Changes at re-import",
        help_text="Hold: a re-import records what it would add, change or remove for review (Review changes on the "
        "source's page), and the approved tools keep being served meanwhile.",
    )
    withhold_incompatible = forms.BooleanField(
        required=False,
        label="Withhold on incompatible schema",
        help_text="While a held change waits, withhold a tool whose new input schema is incompatible.",
    )
    # Set by the preview: what was previewed (gzip, base64) and where it came from, so the import stores exactly it.
    document = forms.CharField(required=False, widget=forms.HiddenInput)
    location = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limit_to_tenants(None)

    def limit_to_tenants(self, tenant_ids: Collection[int] | None) -> None:
        """The secret picker offers the secrets of ``tenant_ids`` (the tenants the person administers; None: every
        tenant's), grouped by tenant. Called by the admin's scoping too."""
        secret_names_offer(self, "secret_name", tenant_ids, tenant_id=None)
        secret_names_offer(self, "person_client_secret", tenant_ids, tenant_id=None)

    def groups(self) -> list[tuple[str | None, str, list[forms.BoundField]]]:
        """The page's fieldsets: the document, whom the tools act as, the shared credentials, held changes."""
        return [(title, help_text, [self[name] for name in names]) for title, help_text, names in FIELD_GROUPS]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not cleaned.get("document") and bool(cleaned.get("url")) == bool(cleaned.get("file")):
            raise forms.ValidationError("Give the document's URL or upload its file (one of the two).")
        personal = personal_config(cleaned, "")
        if personal is not None:
            for field, problems in personal_errors(personal, "", upstream=False).items():
                self.add_error(field, problems)
            if machine_shared(cleaned, "") and not cleaned.get("secret_name"):
                self.add_error("machine", "Choose the secret machine clients use (below), or refuse them.")
        tenant = cleaned.get("tenant")
        if tenant is not None:
            # The shared secret is kept only where it is used: the tenant acts, or machine clients use it.
            if cleaned.get("secret_name") and (personal is None or machine_shared(cleaned, "")):
                secrets_refuse_missing(self, "secret_name", tenant=tenant, names=[cleaned["secret_name"]])
            if personal is not None and personal.get("secret"):
                secrets_refuse_missing(self, "person_client_secret", tenant=tenant, names=[personal["secret"]])
        return cleaned

    def policy(self) -> dict[str, Any]:
        """The source's change settings as chosen here (nothing when the form did not offer them)."""
        if not self.cleaned_data.get("change_policy"):
            return {}
        return {
            "change_policy": self.cleaned_data["change_policy"],
            "withhold_incompatible": self.cleaned_data["withhold_incompatible"],
        }

    def options(self) -> ImportOptions:
        data = self.cleaned_data
        personal = personal_config(data, "")
        # Where the tools act as each person and machine clients are refused, no shared secret is kept.
        shared = personal is None or machine_shared(data, "")
        return ImportOptions(
            prefix=data["tool_prefix"],
            base_url=data["base_url"] or None,
            secret_name=(data["secret_name"] or None) if shared else None,
            client_id=(data["client_id"] or None) if shared else None,
            personal=personal,
            machine_shared=personal is not None and machine_shared(data, ""),
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


STATUS_LABELS = {
    "added": "new tool",
    "changed": "changes",
    "unchanged": "unchanged",
    "taken": "name taken by another tool",
}
# A re-import lists the operations in these groups (in this order), each with a heading; a first import in one.
GROUPS = {
    "new": ("New in the document", "new"),
    "left_out": ("Left out at the last import", "left out before"),
    "unknown": ("Not imported (the last import did not record what it offered)", "not imported"),
    "imported": ("Imported", ""),
}


def _field_names(fields: list[str]) -> str:
    return ", ".join("request" if f == "config" else f.replace("_", " ") for f in fields)


def _status(op: OperationDiff, reimport: bool) -> str:
    """The Status column: what importing the operation does, and on a re-import whether it is new in the document
    or was left out before."""
    if op.status == "changed":
        return f"changes: {_field_names(op.fields)}"
    mark = GROUPS[op.standing][1] if reimport else ""
    if not mark:
        return STATUS_LABELS[op.status]
    return mark if op.status == "added" else f"{mark}; {STATUS_LABELS[op.status]}"


def _rows(diff: ImportDiff, translation: Translation, selected: set[str]) -> list[dict[str, Any]]:
    by_key = {op.key: op for op in diff.operations}
    rows = []
    for number, plan in enumerate(translation.tools, 1):
        method, _, route = plan.key.partition(" ")
        op = by_key[plan.key]
        hints = plan.fields["annotations"] or {}
        rows.append(
            {
                "number": number,
                "key": plan.key,
                "method": method,
                "route": route,
                "name": plan.name,
                "title": plan.fields["title"] or plan.fields["description"].splitlines()[0],
                "status": _status(op, diff.source is not None),
                "state": op.status,
                "standing": op.standing,
                "hint": "read-only" if hints.get("readOnlyHint") else ("destructive" if hints else ""),
                "arguments": len(plan.fields["input_schema"].get("properties", {})),
                "selected": plan.key in selected,
            }
        )
    return rows


def _groups(rows: list[dict[str, Any]], reimport: bool) -> list[dict[str, Any]]:
    """The preview's row groups: one without a heading for a first import; for a re-import, the operations new in
    the document, those left out at the last import and those imported (each shown, even when empty), and any the
    last import did not record."""
    if not reimport:
        return [{"id": "all", "title": "", "rows": rows}]
    groups = [
        {"id": key, "title": title, "rows": [r for r in rows if r["standing"] == key]}
        for key, (title, _) in GROUPS.items()
    ]
    return [group for group in groups if group["rows"] or group["id"] != "unknown"]


def _selection(request: HttpRequest, keys: list[str]) -> list[str]:
    """The operations ticked to import, in the document's order. A page loaded before the boxes meant "import"
    posts those left out instead (``leave_out``), and is read so."""
    if "operation" in request.POST or "leave_out" not in request.POST:
        ticked = set(request.POST.getlist("operation"))
        return [key for key in keys if key in ticked]
    left_out = set(request.POST.getlist("leave_out"))
    return [key for key in keys if key not in left_out]


@admin.register(OpenApiSource)
class OpenApiSourceAdmin(TenantScopedAdmin):
    tenant_path = "tenant"
    list_display = ("name", "tenant", "location", "prefix", "tool_count", "imported_at")
    list_filter = ("tenant",)
    search_fields = ("name", "location", "tenant__slug")
    list_select_related = ("tenant",)
    readonly_fields = (
        *("tenant", "name", "location", "prefix", "base_url", "secret_name", "client_id"),
        *("change_policy", "withhold_incompatible", "held_changes"),
        *("document_sha256", "imported_at", "tool_count"),
    )
    actions = ["import_again"]
    change_form_template = "admin/tenants/openapisource/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[OpenApiSource]:
        return super().get_queryset(request).annotate(tools_made=Count("tools"))

    @admin.display(description="Tools")
    def tool_count(self, obj: Any) -> int:
        return int(getattr(obj, "tools_made", 0))

    @admin.display(description="Waiting for review")
    def held_changes(self, obj: OpenApiSource) -> str:
        count = pending_count(source=obj)
        url = reverse("admin:tenants_openapisource_changes", args=[obj.pk])
        overflow = f" (and {obj.held_overflow} more not recorded)" if obj.held_overflow else ""
        return format_html('<a href="{}">{} change{}{}</a>', url, count, "" if count == 1 else "s", overflow)

    def get_urls(self) -> list[Any]:
        site = self.admin_site
        return [
            path("import/", site.admin_view(self.import_view), name="tenants_openapisource_import"),
            path("<path:object_id>/changes/", site.admin_view(self.changes_view), name="tenants_openapisource_changes"),
            *super().get_urls(),
        ]

    def changes_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The Review changes page of a source that holds a re-import's changes; deciding takes who may import."""
        source = self.get_object(request, object_id)  # another tenant's source is a 404
        if not self.has_view_permission(request, source):
            raise PermissionDenied
        context = {**self.admin_site.each_context(request), "opts": self.model._meta}
        may_decide = self._allowed(request, self.add_roles, source)
        return held_changes_view(request, openapi_held_source(source), may_decide=may_decide, context=context)

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None) -> HttpResponse:
        return HttpResponseRedirect(reverse("admin:tenants_openapisource_import"))

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a source changes by importing it again

    def delete_model(self, request: HttpRequest, obj: OpenApiSource) -> None:
        openapi_source_delete(source=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[OpenApiSource]) -> None:
        for source in queryset:
            openapi_source_delete(source=source)

    @admin.action(description="Import again (review the changes first)")
    def import_again(self, request: HttpRequest, queryset: QuerySet[OpenApiSource]) -> HttpResponse | None:
        sources = list(queryset[:2])
        if len(sources) != 1:
            self.message_user(request, "Choose one source to import again.", level=messages.WARNING)
            return None
        return HttpResponseRedirect(self._again_url(sources[0]))

    @staticmethod
    def _again_url(source: OpenApiSource) -> str:
        return f"{reverse('admin:tenants_openapisource_import')}?source={source.pk}"

    def object_page_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:
        context: dict[str, Any] = {
            "held_changes_url": reverse("admin:tenants_openapisource_changes", args=[obj.pk]),
            "held_count": pending_count(source=obj),
        }
        if self.has_add_permission(request):
            context["import_again_url"] = self._again_url(obj)
        return context

    def _initial(self, request: HttpRequest) -> dict[str, Any]:
        """The form's first values: the tenant asked for, or everything a source was imported with (its page's
        "Import again"); another tenant's source is a 404."""
        source_id = request.GET.get("source")
        if not source_id:
            return {"tenant": request.GET.get("tenant")}
        source = self.get_object(request, source_id)
        location = source.location
        # Whom its tools act as is in their configs (all of them carry the same personal config).
        found = target_auth(tenant_id=source.tenant_id, target=f"openapi:{source.pk}")
        acting, _machine = acting_split(found[1] if found is not None else None, "")
        if found is not None and source.secret_name:
            acting["machine"] = "shared"
        return {
            "tenant": source.tenant_id,
            "url": location if location.startswith(("https://", "http://")) else "",
            "tool_prefix": source.prefix,
            "base_url": source.base_url,
            "secret_name": source.secret_name,
            "client_id": source.client_id,
            "name": source.name,
            **acting,
            "change_policy": source.change_policy,
            "withhold_incompatible": source.withhold_incompatible,
        }

    def import_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        context: dict[str, Any] = {**self.admin_site.each_context(request), "opts": self.model._meta}
        context["title"] = "Import an OpenAPI document"
        if request.method != "POST":
            form = SourceForm(initial=self._initial(request))
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
        """Three steps on one form: the preview (tick the operations to import), the review of what importing them
        changes, the import. The document travels packed in the form, so each step reads exactly the same one."""
        tenant: Tenant = form.cleaned_data["tenant"]
        content, location = _read(form)
        document = document_parse(content, location=location)
        translation = document_translate(document, form.options())
        keys = [plan.key for plan in translation.tools]
        reviewed = bool(form.cleaned_data["document"])
        if "_import" in request.POST and reviewed:
            selected = _selection(request, keys)
            if not selected:
                raise OpenApiError("no operation is ticked: nothing to import")
            report = openapi_import(
                tenant=tenant,
                document=document,
                options=form.options(),
                name=form.cleaned_data["name"],
                select=selected,
                actor=Actor.person(request.user),
                **form.policy(),
            )
            for warning in report.warnings:
                self.message_user(request, warning, level=messages.WARNING)
            self.message_user(request, report.summary(), level=messages.SUCCESS)
            if report.held:
                return HttpResponseRedirect(reverse("admin:tenants_openapisource_changes", args=[report.source.pk]))
            return HttpResponseRedirect(reverse("admin:tenants_openapisource_change", args=[report.source.pk]))
        diff = openapi_import_diff(tenant=tenant, location=document.location, plans=translation.tools)
        review = "_review" in request.POST and reviewed
        if reviewed and ("_review" in request.POST or "_back" in request.POST):
            selected = _selection(request, keys)
        else:
            selected = diff.default_selection()
        if review and not selected:
            form.add_error(None, "No operation is ticked: tick those to import.")
            review = False
        preview = SourceForm(
            initial={**form.cleaned_data, "tenant": tenant.pk, "document": _pack(content), "location": location}
        )
        self.scope_form(request, preview)
        chosen = set(selected)
        rows = _rows(diff, translation, chosen)
        context.update(
            form=preview,
            errors=form.non_field_errors(),
            document=document,
            translation=translation,
            operations_count=len(translation.tools) + len(translation.skipped),
            rows=rows,
            groups=_groups(rows, diff.source is not None),
            reimport=diff.source is not None,
            holds=diff.source is not None
            and form.policy().get("change_policy", diff.source.change_policy) == ChangePolicy.HOLD,
            review=review,
            selected=selected,
        )
        if review:
            changed = diff.of("changed", chosen)
            context.update(
                added=diff.of("added", chosen),
                changed=[(op, _field_names(op.fields)) for op in changed],
                unchanged=len(diff.of("unchanged", chosen)),
                removed=diff.removed_by(chosen),
            )
        else:
            context["vanishing"] = diff.removed_by(chosen)
        return TemplateResponse(request, "admin/tenants/openapisource/import.html", context)
