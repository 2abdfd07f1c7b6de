"""Admin of a tenant's named servers: the server's name, title, instructions, scopes and state, and its selection
edited as choices (the tenant's tools, resources, templates and prompts by name, its upstreams and OpenAPI sources,
the tags its items carry), with the server's URLs and a preview of what it serves now.

The choices are the catalog of the server's tenant (on a new server's page: the tenant chosen, or the only one the
person administers). An entry of the stored selection that names nothing in the catalog now (an item renamed or not
yet created) stays offered, marked, so that saving the page never drops it silently.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join

from mcp_infra.addresses import MCP, endpoint_url
from tenants import servers
from tenants.admin.service_backed import ServiceBackedAdmin, ServiceValidatedForm
from tenants.admin.tenant_page import server_connect
from tenants.models import OpenApiSource, Prompt, Resource, ResourceTemplate, Server, Tenant, Tool, Upstream
from tenants.selection import (
    ITEM_KINDS,
    OPENAPI,
    TAG,
    UPSTREAM,
    selection_entries,
    selection_errors,
    selection_parse,
    server_members,
)

# The editor's fields: one per kind of entry (the items' fields are named after their kind).
EDITOR_FIELDS: dict[str, str] = {
    **{kind: kind for kind in ITEM_KINDS},
    "upstreams": UPSTREAM,
    "openapi_sources": OPENAPI,
    "tags": TAG,
}
MISSING = " (not in the catalog now)"
PREVIEW_NAMES = 50  # names shown per kind in the preview; the count says how many more


def _catalog_choices(tenant: Tenant | None) -> dict[str, list[tuple[str, str]]]:
    """Each editor field's choices from ``tenant``'s catalog (none without a tenant)."""
    if tenant is None:
        return {name: [] for name in EDITOR_FIELDS}

    def keys(model: type[Any], field: str) -> list[tuple[str, str]]:
        values = model._default_manager.filter(tenant=tenant).order_by(field).values_list(field, flat=True)
        return [(value, value) for value in dict.fromkeys(values)]

    tags: set[str] = set()
    for model in (Tool, Resource, ResourceTemplate, Prompt):
        for item_tags in model._default_manager.filter(tenant=tenant).exclude(tags=[]).values_list("tags", flat=True):
            tags.update(tag for tag in item_tags or [] if isinstance(tag, str))
    return {
        "tools": keys(Tool, "name"),
        "resources": keys(Resource, "uri"),
        "templates": keys(ResourceTemplate, "uri_template"),
        "prompts": keys(Prompt, "name"),
        "upstreams": [(str(pk), name) for pk, name in Upstream.objects.filter(tenant=tenant).values_list("pk", "name")],
        "openapi_sources": [
            (str(pk), name) for pk, name in OpenApiSource.objects.filter(tenant=tenant).values_list("pk", "name")
        ],
        "tags": [(tag, tag) for tag in sorted(tags)],
    }


def _stored_values(selection: Any) -> dict[str, list[str]]:
    """The editor fields' values of a stored selection (a malformed one, which no service stores, gives none)."""
    values: dict[str, list[str]] = {name: [] for name in EDITOR_FIELDS}
    if selection_errors(selection):
        return values
    kinds = {kind: name for name, kind in EDITOR_FIELDS.items()}
    for entry in selection:
        kind, _, value = entry.partition(":")
        values[kinds[kind]].append(value)
    return values


class ServerForm(ServiceValidatedForm):
    """The server's fields, and its selection as one multiple choice per kind of entry."""

    validator = staticmethod(servers.server_validate)

    tools = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label="Tools")
    resources = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label="Resources")
    templates = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Resource templates"
    )
    prompts = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label="Prompts")
    upstreams = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Upstream MCP servers",
        help_text="Everything mirrored from them, now and after each refresh.",
    )
    openapi_sources = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="OpenAPI sources",
        help_text="Every tool imported from them, now and after each import.",
    )
    tags = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Tags",
        help_text="Every tool, resource, template and prompt carrying one of them (tags are set on each item's page).",
    )

    class Meta:
        model = Server
        fields = ("tenant", "slug", "title", "instructions", "required_scopes", "enabled")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stored = list(self.instance.selection or []) if self.instance.pk else []
        initial = _stored_values(self._stored)
        self._offer(self._catalog_tenant(), initial)

    def _catalog_tenant(self) -> Tenant | None:
        """Whose catalog the editor offers: the server's tenant, else the one chosen in the form."""
        if self.instance.pk is not None:
            return self.instance.tenant
        field = self.fields.get("tenant")
        raw = self.data.get(self.add_prefix("tenant")) if self.is_bound else self.initial.get("tenant")
        if not raw or not isinstance(field, forms.ModelChoiceField) or field.queryset is None:
            return None
        try:
            chosen: Tenant | None = field.queryset.filter(pk=int(str(getattr(raw, "pk", raw)))).first()
        except ValueError:
            return None
        return chosen

    def _offer(self, tenant: Tenant | None, initial: dict[str, list[str]]) -> None:
        """Offer ``tenant``'s catalog in the editor, the stored values chosen (those the catalog lacks marked)."""
        self.catalog_tenant = tenant
        for name, choices in _catalog_choices(tenant).items():
            field = self.fields[name]
            assert isinstance(field, forms.MultipleChoiceField)
            offered = {value for value, _ in choices}
            kept = [(value, f"{value}{MISSING}") for value in initial[name] if value not in offered]
            field.choices = [*choices, *kept]
            self.initial.setdefault(name, initial[name])
        if tenant is None:
            self.fields[
                "tools"
            ].help_text = (
                "Choose the server's tenant and save it (Save and continue editing): its catalog is offered here then."
            )

    def limit_to_tenants(self, tenant_ids: Collection[int] | None) -> None:
        """Called by the admin's scoping: a tenant the person does not administer offers nothing; a person who
        administers one tenant finds it chosen on a new server's page (``scoping.preselect_only_tenant``), and its
        catalog offered."""
        if tenant_ids is None:
            return
        if self.catalog_tenant is not None and self.catalog_tenant.pk not in tenant_ids:
            self._offer(None, {name: [] for name in EDITOR_FIELDS})
        elif self.catalog_tenant is None and self.instance.pk is None and len(tenant_ids) == 1:
            (only,) = tenant_ids
            self._offer(Tenant.objects.filter(pk=only).first(), {name: [] for name in EDITOR_FIELDS})

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        chosen = {name: cleaned.get(name) or [] for name in EDITOR_FIELDS}
        try:
            entries = selection_entries(
                tools=chosen["tools"],
                resources=chosen["resources"],
                templates=chosen["templates"],
                prompts=chosen["prompts"],
                upstreams=[int(v) for v in chosen["upstreams"]],
                openapi_sources=[int(v) for v in chosen["openapi_sources"]],
                tags=chosen["tags"],
            )
        except ValueError:
            raise forms.ValidationError("A source is named by its id.") from None
        cleaned["selection"] = entries
        self.instance.selection = entries
        return cleaned

    @cached_property
    def changed_data(self) -> list[str]:
        changed = list(super().changed_data)
        if self.is_valid() and self.cleaned_data.get("selection") != self._stored:
            changed.append("selection")
        return changed


@admin.register(Server)
class ServerAdmin(ServiceBackedAdmin):
    tenant_path = "tenant"
    form = ServerForm
    fields_for_service = tuple(sorted(servers.SERVER_FIELDS))
    list_display = ("slug", "title", "tenant", "enabled", "url", "updated_at")
    list_filter = ("enabled", "tenant")
    search_fields = ("slug", "title", "tenant__slug")
    list_select_related = ("tenant",)
    autocomplete_fields = ["tenant"]
    readonly_fields = ("preview", "created_at", "updated_at")
    editor_description = (
        "Choose what the server serves: items one by one, everything from a source, or everything with a tag. An "
        "item is served when any choice picks it; a disabled tool never is."
    )

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        about = ("tenant", "slug", "title", "instructions", "enabled")
        stored = [("Serving now", {"fields": ("preview",)}), ("Dates", {"fields": ("created_at", "updated_at")})]
        return [
            (None, {"fields": about}),
            ("What it serves", {"fields": tuple(EDITOR_FIELDS), "description": self.editor_description}),
            ("Authorization", {"fields": ("required_scopes",)}),
            *(stored if obj is not None else []),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # A server does not move between tenants: its selection names that tenant's items and sources.
        return (*self.readonly_fields, "tenant") if obj is not None else tuple(self.readonly_fields)

    @admin.display(description="URL")
    def url(self, obj: Server) -> str:
        return endpoint_url("", obj.tenant.slug, MCP, obj.slug)

    @admin.display(description="What it serves now")
    def preview(self, obj: Server) -> str:
        """The items the stored selection picks from the catalog as it is now, per kind."""
        try:
            selection = selection_parse(obj.selection)
        except ValueError:
            return "—"
        rows = []
        for kind in ITEM_KINDS:
            members = sorted(server_members(tenant=obj.tenant, selection=selection, kind=kind))
            shown = ", ".join(members[:PREVIEW_NAMES]) + (", …" if len(members) > PREVIEW_NAMES else "")
            rows.append((ServerForm.base_fields[kind].label, len(members), shown or "none"))
        return format_html(
            '<dl class="server-preview">{}</dl>',
            format_html_join("", "<dt>{} ({})</dt><dd>{}</dd>", rows),
        )

    def object_page_context(self, request: HttpRequest, obj: Server) -> dict[str, Any]:
        # Its URLs and client configuration, as the tenant page shows them.
        return {"server_connect": server_connect(request, obj.tenant, obj)}

    def create(self, obj: Server, values: dict[str, Any]) -> Server:
        return servers.server_create(tenant=obj.tenant, **values)

    def update(self, stored: Server, data: dict[str, Any]) -> None:
        servers.server_update(server=stored, data=data)

    def remove(self, obj: Server) -> None:
        servers.server_delete(server=obj)
