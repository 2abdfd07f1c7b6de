"""Admin for a tenant's catalog: tools, resources, resource templates and prompts, each written through its
services. Other apps add pages to the tool admin through ``tool_pages`` (the console's run page)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from tenants import services, validation
from tenants.admin.pages import tool_pages
from tenants.admin.prompt_details import PromptDetailsForm
from tenants.admin.resource_content import ResourceContentForm
from tenants.admin.schema import SchemaEditorAdmin
from tenants.admin.service_backed import ServiceBackedAdmin, form_for
from tenants.admin.tool_details import ToolDetailsForm
from tenants.models import Prompt, Resource, ResourceTemplate, Tool


class CatalogEntryAdmin(ServiceBackedAdmin):
    tenant_path = "tenant"
    list_select_related = ("tenant",)
    autocomplete_fields = ["tenant"]
    readonly_fields = ("created_at", "updated_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Entries do not move between tenants: a move would be a delete in one catalog and an add in another.
        return (*self.readonly_fields, "tenant") if obj is not None else tuple(self.readonly_fields)


# What an admin may change on a tool that came from a source (the rest is the source's and shown read-only): an
# upstream's mirror keeps a changed name, title, description and enabled flag; an OpenAPI re-import rewrites the
# name, texts, schemas, annotations and request; neither touches task support, scopes or tags. Icons are shown as
# the source left them (their fields would need the whole tool form).
SOURCE_KEEPS = ("task_support", "required_scopes", "tags")
UPSTREAM_OVERRIDES = ("name", "title", "description", "enabled", *SOURCE_KEEPS)
OPENAPI_OVERRIDES = ("enabled", *SOURCE_KEEPS)
SOURCE_SHOWN = (
    "backend",
    "input_schema",
    "output_schema",
    "annotations",
    "icons",
    "config",
)
Fieldsets = list[tuple[str | None, dict[str, Any]]]


# The script that shows the chosen backend's section alone and gives rows their Add and Remove buttons.
SECTIONS_MEDIA = forms.Media(js=("admin-backend-sections.js",), css={"all": ("admin-backend-sections.css",)})


def section_fieldsets(form: Any, model: type[models.Model]) -> Fieldsets:
    """A fieldset per backend section of ``model``'s form, each shown alone by the script when its backend is chosen."""
    return [
        (
            section.section_title,
            {"fields": section.section_fields, "classes": ("backend-section", f"backend-section-{section.backend}")},
        )
        for section in getattr(form, "sections", ())
        if model in section.models
    ]


def dates(obj: Any) -> Fieldsets:
    return [("Dates", {"fields": ("created_at", "updated_at")})] if obj is not None else []


def _source_overrides(obj: Any) -> tuple[str, ...] | None:
    """The fields an admin may change on ``obj`` when it came from a source, or None for a tool of their own."""
    if obj is None:
        return None
    if obj.upstream_id is not None:
        return UPSTREAM_OVERRIDES
    if obj.openapi_source_id is not None:
        return OPENAPI_OVERRIDES
    return None


@admin.register(Tool)
class ToolAdmin(SchemaEditorAdmin, CatalogEntryAdmin):
    form = form_for(Tool, validation.tool_validate, extra=(ToolDetailsForm,))
    fields_for_service = tuple(sorted(services.TOOL_FIELDS))
    list_display = ("name", "tenant", "title", "backend", "task_support", "enabled", "updated_at")
    list_filter = ("backend", "task_support", "enabled", "tenant", "openapi_source")
    search_fields = ("name", "title", "description", "tenant__slug")
    pages = tool_pages

    def get_urls(self) -> list[Any]:
        return [*self.pages.urls(self), *self.schema_check_urls(), *super().get_urls()]

    def object_page_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:
        # The links to the pages other apps added (the change form's object tools show them).
        return {"object_pages": self.pages.links(obj)}

    def formfield_for_dbfield(self, db_field: models.Field[Any, Any], request: HttpRequest, **kwargs: Any) -> Any:
        widget = self.schema_widgets().get(db_field.name)
        if widget is not None:
            kwargs["widget"] = widget
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Where an imported tool came from: importing that source again rewrites what the document sets.
        readonly = (*super().get_readonly_fields(request, obj), "openapi_source")
        overrides = _source_overrides(obj)
        if overrides is None:
            return readonly
        from_source = ("name", "title", "description", *SOURCE_SHOWN, "enabled", "upstream")
        return (*readonly, *(f for f in from_source if f not in overrides))

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        overrides = _source_overrides(obj)
        if overrides is not None:
            source = "upstream" if obj.upstream_id is not None else "openapi_source"
            described = (
                "The source sets these; refreshing or importing it again updates them. What you may change is "
                "above and is kept."
            )
            return [
                (None, {"fields": ("tenant", source, "name", "title", "description")}),
                ("Serving", {"fields": ("enabled", "task_support", "required_scopes", "tags")}),
                ("From its source", {"fields": SOURCE_SHOWN, "description": described}),
                *dates(obj),
            ]
        details = ToolDetailsForm.details_fields
        advanced = ("collapse",) if obj is None else ()
        return [
            (None, {"fields": ("tenant", "name", "title", "description", "backend")}),
            *section_fieldsets(self.form, Tool),
            ("Arguments and result", {"fields": ("input_schema", "output_schema")}),
            ("Annotations", {"fields": details[:-1]}),
            ("Icons", {"fields": details[-1:]}),
            ("Serving", {"fields": ("task_support", "enabled", "required_scopes", "tags")}),
            # Closed on the add page (a new tool rarely needs it), open on a tool's page, where it may hold something.
            ("Advanced (JSON)", {"fields": ("config", "annotations", "icons"), "classes": advanced}),
            *dates(obj),
        ]

    @property
    def media(self) -> Any:
        return super().media + SECTIONS_MEDIA

    def create(self, obj: Tool, values: dict[str, Any]) -> Tool:
        return services.tool_create(tenant=obj.tenant, **values)

    def update(self, stored: Tool, data: dict[str, Any]) -> None:
        services.tool_update(tool=stored, data=data)

    def remove(self, obj: Tool) -> None:
        services.tool_delete(tool=obj)


@admin.register(Resource)
class ResourceAdmin(CatalogEntryAdmin):
    form = form_for(Resource, validation.resource_validate, extra=(ResourceContentForm,))
    fields_for_service = tuple(sorted(services.RESOURCE_FIELDS))
    list_display = ("uri", "tenant", "name", "mime_type", "updated_at")
    list_filter = ("mime_type", "tenant")
    search_fields = ("uri", "name", "title", "description", "tenant__slug")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return [
            (None, {"fields": ("tenant", "uri", "name", "title", "description", "mime_type", "tags")}),
            ("Content", {"fields": ("text", *ResourceContentForm.content_fields)}),
            ("Annotations", {"fields": ("annotations",)}),
            # Base64 pasted by hand; closed on the add page, open on a resource's page, where it may hold something.
            ("Advanced", {"fields": ("blob",), "classes": ("collapse",) if obj is None else ()}),
            *dates(obj),
        ]

    @property
    def media(self) -> Any:
        return super().media + forms.Media(css={"all": ("admin-backend-sections.css",)})

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
    form = form_for(ResourceTemplate, validation.resource_template_validate)
    fields_for_service = tuple(sorted(services.TEMPLATE_FIELDS))
    list_display = ("name", "tenant", "uri_template", "backend", "updated_at")
    list_filter = ("backend", "tenant")
    search_fields = ("name", "uri_template", "title", "description", "tenant__slug")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return [
            (
                None,
                {"fields": ("tenant", "name", "title", "description", "uri_template", "mime_type", "tags", "backend")},
            ),
            *section_fieldsets(self.form, ResourceTemplate),
            ("Completions", {"fields": ("completions",)}),
            ("Advanced (JSON)", {"fields": ("config",), "classes": ("collapse",) if obj is None else ()}),
            *dates(obj),
        ]

    @property
    def media(self) -> Any:
        return super().media + SECTIONS_MEDIA

    def create(self, obj: ResourceTemplate, values: dict[str, Any]) -> ResourceTemplate:
        return services.resource_template_create(tenant=obj.tenant, **values)

    def update(self, stored: ResourceTemplate, data: dict[str, Any]) -> None:
        services.resource_template_update(template=stored, data=data)

    def remove(self, obj: ResourceTemplate) -> None:
        services.resource_template_delete(template=obj)


@admin.register(Prompt)
class PromptAdmin(CatalogEntryAdmin):
    form = form_for(Prompt, validation.prompt_validate, extra=(PromptDetailsForm,))
    fields_for_service = tuple(sorted(services.PROMPT_FIELDS))
    list_display = ("name", "tenant", "title", "backend", "updated_at")
    list_filter = ("backend", "tenant")
    search_fields = ("name", "title", "description", "tenant__slug")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        # The messages are a static prompt's (a Python prompt's function makes them): shown with that backend.
        messages = {
            "fields": PromptDetailsForm.message_fields,
            "classes": ("backend-section", "backend-section-static"),
        }
        return [
            (None, {"fields": ("tenant", "name", "title", "description", "tags", "backend")}),
            *section_fieldsets(self.form, Prompt),
            ("Arguments", {"fields": PromptDetailsForm.details_fields}),
            ("Messages", messages),
            ("Completions", {"fields": ("completions",)}),
            (
                "Advanced (JSON)",
                {"fields": ("arguments", "messages", "config"), "classes": ("collapse",) if obj is None else ()},
            ),
            *dates(obj),
        ]

    @property
    def media(self) -> Any:
        return super().media + SECTIONS_MEDIA

    def create(self, obj: Prompt, values: dict[str, Any]) -> Prompt:
        return services.prompt_create(tenant=obj.tenant, **values)

    def update(self, stored: Prompt, data: dict[str, Any]) -> None:
        services.prompt_update(prompt=stored, data=data)

    def remove(self, obj: Prompt) -> None:
        services.prompt_delete(prompt=obj)
