"""Admin for a tenant's secrets through ``tenants.secrets``: values are write-only, never rendered. A secret's page
shows what names it (``tenants.secret_references``), and deleting one in use lists those first."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.actions import delete_selected
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from tenants import secrets
from tenants.admin.scoping import TenantScopedAdmin
from tenants.admin.service_backed import adopt
from tenants.models import Secret
from tenants.secret_references import SecretUse, secret_uses

UseLink = tuple[Secret, list[dict[str, str]]]


def _links(secret: Secret) -> list[dict[str, str]]:
    """What names ``secret``, with the address of each user's admin page."""
    return [{"kind": use.kind, "name": use.name, "url": _address(use)} for use in secret_uses(secret=secret)]


def _address(use: SecretUse) -> str:
    opts = use.model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[use.pk])


class SecretAdminForm(forms.ModelForm):
    """The value is write-only: never rendered, required when adding, and left as stored when blank on edit."""

    value = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only: a stored value is never shown. Leave blank to keep the stored value.",
    )

    class Meta:
        model = Secret
        fields = ("tenant", "name")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        value = cleaned.get("value")
        if self.instance.pk is None and not value:
            self.add_error("value", "A new secret needs a value.")
        elif value and (problem := secrets.secret_value_problem(value)) is not None:
            self.add_error("value", problem)
        return cleaned


@admin.register(Secret)
class SecretAdmin(TenantScopedAdmin):
    """Tenant secrets through ``tenants.secrets``; the list and the form show names and dates, never values."""

    tenant_path = "tenant"
    form = SecretAdminForm
    list_display = ("name", "tenant", "updated_at")
    list_filter = ("tenant",)
    list_select_related = ("tenant",)
    search_fields = ("name", "tenant__slug")
    autocomplete_fields = ["tenant"]
    fields = ("tenant", "name", "value", "key_id", "created_at", "updated_at")
    readonly_fields = ("key_id", "created_at", "updated_at")
    delete_confirmation_template = "admin/tenants/secret/delete_confirmation.html"
    delete_selected_confirmation_template = "admin/tenants/secret/delete_selected_confirmation.html"
    actions = ["delete_selected"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # The name is bound into the ciphertext, and the tenant owns it: a rename is a new secret.
        if obj is None:
            return tuple(self.readonly_fields)
        return (*self.readonly_fields, "tenant", "name", "used_by")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_fields(request, obj))
        return (*fields[:3], "used_by", *fields[3:]) if obj is not None and "used_by" not in fields else fields

    @admin.display(description="Used by")
    def used_by(self, obj: Secret) -> str:
        links = _links(obj)
        if not links:
            return "Nothing names this secret."
        items = format_html_join(
            "", '<li>{} <a href="{}">{}</a></li>', ((u["kind"], u["url"], u["name"]) for u in links)
        )
        return format_html("<ul>{}</ul>", items)

    def render_delete_form(self, request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
        secret = context.get("object")
        if isinstance(secret, Secret):
            links = _links(secret)
            context["secret_uses"] = [(secret, links)] if links else []
        return super().render_delete_form(request, context)

    @admin.action(permissions=["delete"], description="Delete selected secrets")
    def delete_selected(self, request: HttpRequest, queryset: QuerySet[Secret]) -> HttpResponse | None:
        """Django's bulk delete, whose confirmation lists what names each secret."""
        response = delete_selected(self, request, queryset)
        if isinstance(response, TemplateResponse) and response.context_data is not None:
            uses: list[UseLink] = [(s, links) for s in queryset.select_related("tenant") if (links := _links(s))]
            response.context_data["secret_uses"] = uses
        return response

    def save_model(self, request: HttpRequest, obj: Secret, form: forms.ModelForm, change: bool) -> None:
        value = form.cleaned_data.get("value") or ""
        if change and not value:
            return
        adopt(obj, secrets.secret_set(tenant=obj.tenant, name=obj.name, value=value))

    def delete_model(self, request: HttpRequest, obj: Secret) -> None:
        secrets.secret_delete(tenant=obj.tenant, name=obj.name)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Secret]) -> None:
        for secret in queryset.select_related("tenant"):
            secrets.secret_delete(tenant=secret.tenant, name=secret.name)
