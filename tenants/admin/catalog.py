"""Admin for tenants and their catalogs. Forms validate like the services; every save and delete calls them,
so catalog-change notifications fire for admin edits too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from tenants import secrets, services, validation
from tenants.admin.fields import as_typed
from tenants.admin.members import MembershipForm, is_last_owner
from tenants.admin.policy import OWNING, admin_scope
from tenants.admin.python_functions import PythonFunctionForm
from tenants.admin.schema import SchemaEditorAdmin
from tenants.admin.scoping import NOBODY, TenantScopedAdmin, TenantScopedInline
from tenants.admin.tenant_page import tenant_page_context
from tenants.models import Membership, Prompt, Resource, ResourceTemplate, Secret, Tenant, Tool

JSON_WIDGET = forms.Textarea(attrs={"rows": 10, "cols": 100, "style": "font-family: monospace"})


class ServiceValidatedForm(forms.ModelForm):
    """A model form that also runs the service-level validator, so the admin shows the same errors."""

    validator: Callable[[Any], None] = staticmethod(lambda instance: None)

    # _post_clean is where ModelForm validates the instance built from the form; ours runs right after.
    def _post_clean(self) -> None:  # type: ignore[misc]
        super()._post_clean()  # type: ignore[misc]
        if self.errors:
            return
        try:
            type(self).validator(self.instance)
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                self.add_error(field if field in self.fields else None, messages)


def _form_for(model: type[models.Model], validator: Callable[[Any], None]) -> type[ServiceValidatedForm]:
    meta = type("Meta", (), {"model": model, "fields": "__all__"})
    python_capable = model in (Tool, ResourceTemplate, Prompt)
    bases = (ServiceValidatedForm, PythonFunctionForm) if python_capable else (ServiceValidatedForm,)
    form: type[ServiceValidatedForm] = type(
        f"{model.__name__}AdminForm", bases, {"Meta": meta, "validator": staticmethod(validator)}
    )
    if python_capable:
        # The admin lays fields out in base_fields order: the function select goes right after the backend.
        fields = dict(form.base_fields)
        chooser = fields.pop("python_function")
        ordered = {}
        for name, field in fields.items():
            ordered[name] = field
            if name == "backend":
                ordered["python_function"] = chooser
        form.base_fields = ordered
    return form


def _adopt(obj: models.Model, stored: models.Model) -> None:
    # The admin keeps using ``obj`` (redirects, log entries): give it the state of the row the service stored.
    obj.__dict__.update(stored.__dict__)


class ServiceBackedAdmin(TenantScopedAdmin):
    """Routes add, change and delete through the entity's services.

    ``fields_for_service`` are the form fields passed to the create service and, when changed, to update.
    """

    fields_for_service: tuple[str, ...] = ()
    formfield_overrides = {models.JSONField: {"widget": JSON_WIDGET}}

    def formfield_for_dbfield(self, db_field: models.Field[Any, Any], request: HttpRequest, **kwargs: Any) -> Any:
        return super().formfield_for_dbfield(db_field, request, **as_typed(db_field, kwargs))

    def create(self, obj: Any, values: dict[str, Any]) -> models.Model:
        raise NotImplementedError

    def update(self, stored: Any, data: dict[str, Any]) -> None:
        raise NotImplementedError

    def remove(self, obj: Any) -> None:
        raise NotImplementedError

    def save_model(self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool) -> None:
        values = {f: form.cleaned_data[f] for f in self.fields_for_service if f in form.cleaned_data}
        if change:
            # ``obj`` already carries the form's values; the service compares against the stored row.
            stored = type(obj)._default_manager.get(pk=obj.pk)
            self.update(stored, {f: v for f, v in values.items() if f in form.changed_data})
            _adopt(obj, stored)
        else:
            _adopt(obj, self.create(obj, values))

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.remove(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            self.remove(obj)


class MembershipInline(TenantScopedInline, admin.StackedInline):
    """The tenant page's members: owners add people by username or e-mail; admins see who is in."""

    model = Membership
    form = MembershipForm
    fields = ("person", "role")
    extra = 0
    tenant_path = "tenant"
    add_roles = change_roles = delete_roles = OWNING


@admin.register(Tenant)
class TenantAdmin(ServiceBackedAdmin):
    form = _form_for(Tenant, validation.tenant_validate)
    tenant_path = ""
    add_roles = delete_roles = NOBODY  # tenants are made and removed by platform staff
    fields_for_service = tuple(sorted(services.TENANT_FIELDS))
    list_display = ("slug", "name", "status", "requires_authorization", "created_at")
    list_filter = ("status", "requires_authorization")
    search_fields = ("slug", "name")
    inlines = [MembershipInline]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Widening the outbound door lets a tenant's tools reach private networks, and suspending a tenant is a
        # sanction: platform staff decide both.
        readonly = tuple(super().get_readonly_fields(request, obj))
        return readonly if request.user.is_superuser else (*readonly, "status", "outbound_allowed_networks")

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> Any:
        if obj is not None and obj.pk is not None:
            context.update(tenant_page_context(request, obj))
        return super().render_change_form(request, context, add, change, form_url, obj)

    def create(self, obj: Tenant, values: dict[str, Any]) -> Tenant:
        return services.tenant_create(**values)

    def update(self, stored: Tenant, data: dict[str, Any]) -> None:
        services.tenant_update(tenant=stored, data=data)

    def remove(self, obj: Tenant) -> None:
        services.tenant_delete(tenant=obj)

    def save_formset(self, request: HttpRequest, form: forms.ModelForm, formset: Any, change: bool) -> None:
        if formset.model is not Membership:
            super().save_formset(request, form, formset, change)
            return
        tenant = form.instance
        pending = formset.save(commit=False)
        for membership in formset.deleted_objects:
            services.membership_remove(tenant=tenant, user=membership.user)
        for membership in pending:
            services.membership_add(tenant=tenant, user=membership.user, role=membership.role)


@admin.register(Membership)
class MembershipAdmin(TenantScopedAdmin):
    """Owners add people by username or e-mail (the platform's user list is never shown) and change roles;
    admins see who is in their tenants."""

    form = MembershipForm
    list_display = ("user", "tenant", "role", "created_at")
    list_filter = ("role", "tenant")
    search_fields = ("user__username", "user__email", "tenant__slug")
    autocomplete_fields = ["tenant"]
    list_select_related = ("user", "tenant")
    tenant_path = "tenant"
    add_roles = change_roles = delete_roles = OWNING

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return ("tenant", "person", "role")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # A membership is one person in one tenant: another person or tenant is another membership.
        return ("tenant",) if obj is not None else ()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Owners cannot leave their tenant ownerless; platform staff can (they also delete whole tenants).
        if obj is not None and not admin_scope(request).everything and is_last_owner(obj):
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: Membership, form: forms.ModelForm, change: bool) -> None:
        _adopt(obj, services.membership_add(tenant=obj.tenant, user=obj.user, role=obj.role))

    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        services.membership_remove(tenant=obj.tenant, user=obj.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Membership]) -> None:
        for membership in queryset.select_related("tenant", "user"):
            services.membership_remove(tenant=membership.tenant, user=membership.user)


class CatalogEntryAdmin(ServiceBackedAdmin):
    tenant_path = "tenant"
    list_select_related = ("tenant",)
    autocomplete_fields = ["tenant"]
    readonly_fields = ("created_at", "updated_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Entries do not move between tenants: a move would be a delete in one catalog and an add in another.
        return (*self.readonly_fields, "tenant") if obj is not None else tuple(self.readonly_fields)


@admin.register(Tool)
class ToolAdmin(SchemaEditorAdmin, CatalogEntryAdmin):
    form = _form_for(Tool, validation.tool_validate)
    fields_for_service = tuple(sorted(services.TOOL_FIELDS))
    list_display = ("name", "tenant", "title", "backend", "task_support", "enabled", "updated_at")
    list_filter = ("backend", "task_support", "enabled", "tenant", "openapi_source")
    search_fields = ("name", "title", "description", "tenant__slug")

    def get_urls(self) -> list[Any]:
        return [*self.schema_check_urls(), *super().get_urls()]

    def formfield_for_dbfield(self, db_field: models.Field[Any, Any], request: HttpRequest, **kwargs: Any) -> Any:
        widget = self.schema_widgets().get(db_field.name)
        if widget is not None:
            kwargs["widget"] = widget
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Where an imported tool came from: importing that source again rewrites what the document sets.
        return (*super().get_readonly_fields(request, obj), "openapi_source")

    def create(self, obj: Tool, values: dict[str, Any]) -> Tool:
        return services.tool_create(tenant=obj.tenant, **values)

    def update(self, stored: Tool, data: dict[str, Any]) -> None:
        services.tool_update(tool=stored, data=data)

    def remove(self, obj: Tool) -> None:
        services.tool_delete(tool=obj)


@admin.register(Resource)
class ResourceAdmin(CatalogEntryAdmin):
    form = _form_for(Resource, validation.resource_validate)
    fields_for_service = tuple(sorted(services.RESOURCE_FIELDS))
    list_display = ("uri", "tenant", "name", "mime_type", "updated_at")
    list_filter = ("mime_type", "tenant")
    search_fields = ("uri", "name", "title", "description", "tenant__slug")

    def formfield_for_dbfield(self, db_field: models.Field[Any, Any], request: HttpRequest, **kwargs: Any) -> Any:
        # An empty text or blob box means "not this one", which the text-xor-blob rule needs as NULL.
        if db_field.name in ("text", "blob"):
            kwargs["empty_value"] = None
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def create(self, obj: Resource, values: dict[str, Any]) -> Resource:
        return services.resource_create(tenant=obj.tenant, **values)

    def update(self, stored: Resource, data: dict[str, Any]) -> None:
        services.resource_update(resource=stored, data=data)

    def remove(self, obj: Resource) -> None:
        services.resource_delete(resource=obj)


@admin.register(ResourceTemplate)
class ResourceTemplateAdmin(CatalogEntryAdmin):
    form = _form_for(ResourceTemplate, validation.resource_template_validate)
    fields_for_service = tuple(sorted(services.TEMPLATE_FIELDS))
    list_display = ("name", "tenant", "uri_template", "backend", "updated_at")
    list_filter = ("backend", "tenant")
    search_fields = ("name", "uri_template", "title", "description", "tenant__slug")

    def create(self, obj: ResourceTemplate, values: dict[str, Any]) -> ResourceTemplate:
        return services.resource_template_create(tenant=obj.tenant, **values)

    def update(self, stored: ResourceTemplate, data: dict[str, Any]) -> None:
        services.resource_template_update(template=stored, data=data)

    def remove(self, obj: ResourceTemplate) -> None:
        services.resource_template_delete(template=obj)


@admin.register(Prompt)
class PromptAdmin(CatalogEntryAdmin):
    form = _form_for(Prompt, validation.prompt_validate)
    fields_for_service = tuple(sorted(services.PROMPT_FIELDS))
    list_display = ("name", "tenant", "title", "backend", "updated_at")
    list_filter = ("backend", "tenant")
    search_fields = ("name", "title", "description", "tenant__slug")

    def create(self, obj: Prompt, values: dict[str, Any]) -> Prompt:
        return services.prompt_create(tenant=obj.tenant, **values)

    def update(self, stored: Prompt, data: dict[str, Any]) -> None:
        services.prompt_update(prompt=stored, data=data)

    def remove(self, obj: Prompt) -> None:
        services.prompt_delete(prompt=obj)


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
        _adopt(obj, secrets.secret_set(tenant=obj.tenant, name=obj.name, value=value))

    def delete_model(self, request: HttpRequest, obj: Secret) -> None:
        secrets.secret_delete(tenant=obj.tenant, name=obj.name)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Secret]) -> None:
        for secret in queryset.select_related("tenant"):
            secrets.secret_delete(tenant=secret.tenant, name=secret.name)


# The OpenAPI sources' admin (with its import page) and the upstream MCP servers' admin live in their own modules;
# importing them registers them.
from tenants.admin import openapi, upstreams  # noqa: E402, F401
