"""Admin for a tenant's secrets through ``tenants.secrets``: values are write-only, never rendered."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from tenants import secrets
from tenants.admin.scoping import TenantScopedAdmin
from tenants.admin.service_backed import adopt
from tenants.models import Secret


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

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # The name is bound into the ciphertext, and the tenant owns it: a rename is a new secret.
        return (*self.readonly_fields, "tenant", "name") if obj is not None else tuple(self.readonly_fields)

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
