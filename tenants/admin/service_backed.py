"""The base of the admin classes whose writes go through a service: forms validate like the services, and every
save and delete calls them, so catalog-change notifications fire for admin edits too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from tenants.admin.backend_forms.base import BackendSectionForm, SectionedConfigForm
from tenants.admin.fields import as_typed
from tenants.admin.scoping import TenantScopedAdmin
from tenants.backends.plugs import admin_forms
from tenants.models import Prompt, ResourceTemplate, Tool

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
            # A mixin that edits a field through others says where its errors show (``validation_error_field``).
            moved = getattr(self, "validation_error_field", None)
            for field, messages in exc.message_dict.items():
                shown = moved(field) if callable(moved) else field
                self.add_error(shown if shown in self.fields else None, messages)
        # What the config names must exist (``SectionedConfigForm``): said beside the validation's own errors.
        check_references = getattr(self, "check_references", None)
        if callable(check_references):
            check_references()


def form_for(
    model: type[models.Model], validator: Callable[[Any], None], *, extra: tuple[type, ...] = ()
) -> type[ServiceValidatedForm]:
    """The admin form of ``model``: the service's validation, and for entries with a backend, every backend plug's
    section (``CatalogBackend.admin_form``) and the ``extra`` mixins, the sections right after the backend (the
    chosen-first ones, the Python function, first of all)."""
    meta = type("Meta", (), {"model": model, "fields": "__all__"})
    attributes: dict[str, Any] = {"Meta": meta, "validator": staticmethod(validator)}
    if model not in (Tool, ResourceTemplate, Prompt):
        return type(f"{model.__name__}AdminForm", (ServiceValidatedForm, *extra), attributes)
    sections = [s for s in admin_forms() if issubclass(s, BackendSectionForm)]
    sections.sort(key=lambda s: not getattr(s, "chosen_first", False))
    attributes["sections"] = tuple(sections)
    # A field set to None is left out of the form (and of the forms the admin derives from it).
    attributes |= {n: None for s in sections if model not in s.models for n in s.section_fields}
    bases = (ServiceValidatedForm, *extra, SectionedConfigForm, *admin_forms())
    form: type[ServiceValidatedForm] = type(f"{model.__name__}AdminForm", bases, attributes)
    # Without fieldsets the admin lays fields out in base_fields order: sections right after the backend.
    fields = dict(form.base_fields)
    moved = {name: fields.pop(name) for s in sections for name in s.section_fields if name in fields}
    ordered = {}
    for name, field in fields.items():
        ordered[name] = field
        if name == "backend":
            ordered.update(moved)
    form.base_fields = ordered
    return form


def adopt(obj: models.Model, stored: models.Model) -> None:
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
            adopt(obj, stored)
        else:
            adopt(obj, self.create(obj, values))

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.remove(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            self.remove(obj)
