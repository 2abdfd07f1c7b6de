"""The one base every admin class inherits its tenant scoping from. A class declares only ``tenant_path`` (how its
model reaches a tenant, ``None`` for platform staff only) and, where they differ, which roles may do what; lists,
search, filters, object pages, bulk actions, autocomplete, foreign-key choices and inlines then follow the policy.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from django import forms
from django.contrib import admin
from django.contrib.admin.filters import RelatedFieldListFilter, RelatedOnlyFieldListFilter
from django.contrib.admin.utils import get_fields_from_path
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models import QuerySet
from django.http import Http404, HttpRequest

from tenants.admin.audit import audit_delete, audit_form_save
from tenants.admin.fields import BoundedJSONField
from tenants.admin.history import VersionHistoryAdmin
from tenants.admin.policy import ADMINISTERING, AdminScope, admin_scope
from tenants.models import Tenant

Roles = frozenset[str]
NOBODY: Roles = frozenset()  # only superusers


def _declared(cls: type) -> bool:
    return any("tenant_path" in vars(klass) for klass in cls.__mro__ if klass is not TenantScoped)


def scoped_choices(queryset: QuerySet[Any], request: HttpRequest, site: admin.AdminSite, roles: Roles) -> QuerySet[Any]:
    """``queryset`` (of any model) narrowed to what the person may pick: tenants they hold ``roles`` in, rows of a
    scoped model within their tenants, nothing of a model that is platform staff's."""
    scope = admin_scope(request)
    if scope.everything:
        return queryset
    model = queryset.model
    if issubclass(model, Tenant):
        return scope.filter(queryset, "", roles)
    related = site._registry.get(model)
    if isinstance(related, TenantScoped) and related.tenant_path is not None:
        return scope.filter(queryset, related.tenant_path, related.view_roles)
    return queryset.none()


def scope_form_fields(form: forms.BaseForm, request: HttpRequest, site: admin.AdminSite, roles: Roles) -> None:
    """Narrow every model choice of ``form`` (declared or generated) to what the person may pick. A tenant choice
    is required of tenant admins (a row without a tenant is platform staff's) and comes chosen when they may pick
    one tenant only. A form that offers tenants' rows in other fields narrows them in its
    ``limit_to_tenants(tenant_ids)``."""
    scope = admin_scope(request)
    if scope.everything:
        return
    tenant_ids = scope.tenant_ids(roles)
    limit = getattr(form, "limit_to_tenants", None)
    if callable(limit):
        limit(tenant_ids)
    for name, field in form.fields.items():
        if isinstance(field, forms.ModelChoiceField) and field.queryset is not None:
            field.queryset = scoped_choices(field.queryset, request, site, roles)
            if issubclass(field.queryset.model, Tenant):
                field.required = True
                preselect_only_tenant(form, name, tenant_ids)


def preselect_only_tenant(form: forms.BaseForm, name: str, tenant_ids: frozenset[int]) -> None:
    """A person who may pick one tenant only finds it chosen in a new row's form (what they typed, or a tenant
    named in the address, stays)."""
    if len(tenant_ids) != 1 or form.is_bound or getattr(getattr(form, "instance", None), "pk", None) is not None:
        return
    if form.initial.get(name) in (None, ""):
        (form.initial[name],) = tenant_ids


def scoped_form(form_class: type[Any], request: HttpRequest, site: admin.AdminSite, roles: Roles) -> type[Any]:
    """``form_class`` whose instances narrow their model choices with ``scope_form_fields``."""
    if admin_scope(request).everything:
        return form_class

    def __init__(self: forms.BaseForm, *args: Any, **kwargs: Any) -> None:
        form_class.__init__(self, *args, **kwargs)
        scope_form_fields(self, request, site, roles)

    return type(form_class.__name__, (form_class,), {"__init__": __init__, "__module__": form_class.__module__})


class ScopedRelatedFieldListFilter(RelatedFieldListFilter):
    """A related-field filter whose choices are only what the person may see (the stock one lists every row)."""

    def field_choices(self, field: Any, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[Any]:
        ordering = self.field_admin_ordering(field, request, model_admin)
        related = field.remote_field.model if field.remote_field else field.related_model
        allowed = scoped_choices(related._default_manager.all(), request, model_admin.admin_site, ADMINISTERING)
        return list(
            field.get_choices(include_blank=False, ordering=ordering, limit_choices_to={"pk__in": allowed.values("pk")})
        )


class TenantScoped:
    """What scoped admins and inlines share: the declared path to a tenant and the roles per kind of access."""

    # How a row reaches its tenant as an ORM path ("tenant", "application__tenant"; "" for tenants themselves), or
    # None: platform staff's only. Every subclass declares it; a missing declaration fails at start-up.
    tenant_path: ClassVar[str | None]
    view_roles: ClassVar[Roles] = ADMINISTERING
    add_roles: ClassVar[Roles] = ADMINISTERING
    change_roles: ClassVar[Roles] = ADMINISTERING
    delete_roles: ClassVar[Roles] = ADMINISTERING

    def _check_declared(self) -> None:
        if not _declared(type(self)):
            raise ImproperlyConfigured(
                f"{type(self).__name__} must declare tenant_path (how its model reaches a tenant, or None for "
                "platform staff only)."
            )

    def tenant_id_of(self, obj: models.Model) -> int | None:
        """The tenant ``obj`` belongs to, following ``tenant_path`` (None when it belongs to none)."""
        path = self.tenant_path
        if path is None:
            return None
        if path == "":
            return int(obj.pk) if obj.pk is not None else None
        *hops, last = path.split("__")
        target: Any = obj
        for hop in hops:
            target = getattr(target, hop, None)
            if target is None:
                return None
        tenant_id = getattr(target, target._meta.get_field(last).attname, None)
        return int(tenant_id) if tenant_id is not None else None

    def scoped(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        scope = admin_scope(request)
        if scope.everything:
            return queryset
        if self.tenant_path is None:
            return queryset.none()
        return scope.filter(queryset, self.tenant_path, self.view_roles)

    def may(self, scope: AdminScope, roles: Roles, tenant_id: int | None, *, model_level: bool) -> bool:
        if scope.everything:
            return True
        if self.tenant_path is None or not roles:
            return False
        return scope.holds(roles) if model_level else scope.allows(tenant_id, roles)


class TenantScopedAdmin(TenantScoped, VersionHistoryAdmin):
    """A model admin whose every view answers from the policy: a person sees and changes only rows of tenants they
    administer, and another tenant's row is a 404. A model the catalog's history versions gets its history, version
    and recovery pages here (``tenants.admin.history``)."""

    def __init__(self, model: type[models.Model], admin_site: admin.AdminSite) -> None:
        self._check_declared()
        super().__init__(model, admin_site)

    def _allowed(self, request: HttpRequest, roles: Roles, obj: Any) -> bool:
        tenant_id = self.tenant_id_of(obj) if obj is not None else None
        return self.may(admin_scope(request), roles, tenant_id, model_level=obj is None)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return self.scoped(request, super().get_queryset(request))

    def formfield_for_dbfield(self, db_field: models.Field[Any, Any], request: HttpRequest, **kwargs: Any) -> Any:
        if isinstance(db_field, models.JSONField):
            kwargs.setdefault("form_class", BoundedJSONField)  # no JSON box parses unbounded nesting
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._allowed(request, self.view_roles, None)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._allowed(request, self.view_roles, obj) or self.has_change_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._allowed(request, self.add_roles, None)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._allowed(request, self.change_roles, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._allowed(request, self.delete_roles, obj)

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        # Every object page asks this first: a row outside the scope is a 404 before any permission is weighed, so
        # no answer (403, or Django's "does not exist" redirect) tells another tenant's row from a missing one.
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            raise Http404(f"No {self.opts.verbose_name} with this id.")
        return obj

    # The activity log's admin-change audit: one place for every scoped admin class (tenants.admin.audit).
    def construct_change_message(self, request: HttpRequest, form: Any, formsets: Any, add: bool = False) -> Any:
        message = super().construct_change_message(request, form, formsets, add)
        audit_form_save(request=request, form=form, formsets=formsets, add=add, tenant_of=self.tenant_id_of)
        return message

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        for obj in queryset:
            audit_delete(request=request, obj=obj, tenant_id=self.tenant_id_of(obj))
        return super().log_deletions(request, queryset)

    def object_page_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:
        """What a stored object's own page adds to its template's context (links to other pages, live state);
        nothing by default. Never asked on the add page."""
        return {}

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
            context.update(self.object_page_context(request, obj))
        return super().render_change_form(request, context, add, change, form_url, obj)

    def form_roles(self, obj: Any) -> Roles:
        """Who may pick a tenant in this model's form: those who may add it, or change ``obj``."""
        return self.add_roles if obj is None else self.change_roles

    def scope_form(self, request: HttpRequest, form: forms.BaseForm, roles: Roles | None = None) -> None:
        """For custom views: narrow the model choices of a form the view builds itself."""
        scope_form_fields(form, request, self.admin_site, self.add_roles if roles is None else roles)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        return scoped_form(form, request, self.admin_site, self.form_roles(obj))

    def get_changelist_form(self, request: HttpRequest, **kwargs: Any) -> Any:
        form = super().get_changelist_form(request, **kwargs)
        return scoped_form(form, request, self.admin_site, self.change_roles)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if isinstance(field, forms.ModelChoiceField) and field.queryset is not None:
            field.queryset = scoped_choices(field.queryset, request, self.admin_site, self.add_roles)
        return field

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        if isinstance(field, forms.ModelChoiceField) and field.queryset is not None:
            field.queryset = scoped_choices(field.queryset, request, self.admin_site, self.add_roles)
        return field

    def get_list_filter(self, request: HttpRequest) -> Any:
        filters = super().get_list_filter(request)
        if admin_scope(request).everything:
            return filters
        return [self._scoped_filter(entry) for entry in filters]

    def _scoped_filter(self, entry: Any) -> Any:
        if isinstance(entry, str):
            field = get_fields_from_path(self.model, entry)[-1]
            return (entry, ScopedRelatedFieldListFilter) if field.is_relation else entry
        if isinstance(entry, Iterable) and not isinstance(entry, type):
            name, filter_class = entry
            if issubclass(filter_class, RelatedFieldListFilter) and not issubclass(
                filter_class, (ScopedRelatedFieldListFilter, RelatedOnlyFieldListFilter)
            ):
                return (name, ScopedRelatedFieldListFilter)
        return entry


class TenantScopedInline(TenantScoped, admin.options.InlineModelAdmin):
    """An inline on a scoped admin: its rows scoped like a model admin's, its permissions those of the parent
    row's tenant."""

    def __init__(self, parent_model: type[models.Model], admin_site: admin.AdminSite) -> None:
        self._check_declared()
        super().__init__(parent_model, admin_site)

    def _parent_tenant_id(self, obj: Any) -> int | None:
        parent = self.admin_site._registry.get(self.parent_model)
        return parent.tenant_id_of(obj) if isinstance(parent, TenantScoped) and obj is not None else None

    def _allowed(self, request: HttpRequest, roles: Roles, obj: Any) -> bool:
        tenant_id = self._parent_tenant_id(obj)
        return self.may(admin_scope(request), roles, tenant_id, model_level=obj is None)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return self.scoped(request, super().get_queryset(request))

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._allowed(request, self.view_roles, obj) or self.has_change_permission(request, obj)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._allowed(request, self.add_roles, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._allowed(request, self.change_roles, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._allowed(request, self.delete_roles, obj)

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        formset = super().get_formset(request, obj, **kwargs)
        form = scoped_form(formset.form, request, self.admin_site, self.add_roles)
        return type(formset.__name__, (formset,), {"form": form})


def platform_only(admin_class: type[admin.ModelAdmin]) -> type[TenantScopedAdmin]:
    """``admin_class`` (one the platform did not write: users, groups, tokens) for superusers only."""
    return type(
        admin_class.__name__,
        (admin_class, TenantScopedAdmin),
        {"tenant_path": None, "__module__": admin_class.__module__, "wrapped_admin_class": admin_class},
    )
