"""Admin for tenants and their members: the tenant page (its members inline, its endpoint and catalog at a
glance) and the membership admin. A person is named by username or e-mail (the platform's list of people is never
offered), a membership keeps its person and tenant for life, and a tenant keeps at least one owner."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from tenants import services, validation
from tenants.admin.pages import tenant_pages
from tenants.admin.policy import OWNING, admin_scope
from tenants.admin.scoping import NOBODY, TenantScopedAdmin, TenantScopedInline
from tenants.admin.service_backed import ServiceBackedAdmin, adopt, form_for
from tenants.admin.tenant_page import tenant_page_context
from tenants.models import Membership, Tenant

NOT_FOUND = (
    "No single account has this username or e-mail address. Someone without an account: invite them by e-mail "
    "(Invitations)."
)
LAST_OWNER = "A tenant keeps at least one owner: make someone else owner first."


def person_find(text: str) -> Any | None:
    """The one active account whose username is ``text`` or whose e-mail address is ``text`` (any case)."""
    user_model = get_user_model()
    text = text.strip()
    if not text:
        return None
    matches = list(
        user_model._default_manager.filter(
            Q(**{user_model.USERNAME_FIELD: text}) | Q(email__iexact=text), is_active=True
        ).distinct()[:2]
    )
    return matches[0] if len(matches) == 1 else None


def is_last_owner(membership: Membership) -> bool:
    """Whether ``membership`` (as stored) is the only owner of its tenant."""
    if membership.pk is None:
        return False
    stored = Membership.objects.filter(pk=membership.pk).values_list("role", "tenant_id").first()
    if stored is None or stored[0] != Membership.Role.OWNER:
        return False
    owners = Membership.objects.filter(tenant_id=stored[1], role=Membership.Role.OWNER)
    return not owners.exclude(pk=membership.pk).exists()


class MembershipForm(forms.ModelForm):
    person = forms.CharField(
        label="Username or e-mail",
        max_length=254,
        help_text="Of someone who already has an account on this platform. Anyone else: invite them by e-mail "
        "(Invitations).",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )

    class Meta:
        model = Membership
        fields = ("tenant", "role")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            person = self.fields["person"]
            person.disabled = True
            person.required = False
            self.initial["person"] = self.instance.user.get_username()

    def clean_person(self) -> Any:
        if self.instance.pk is not None:
            return self.instance.user
        user = person_find(self.cleaned_data.get("person") or "")
        if user is None:
            raise forms.ValidationError(NOT_FOUND)
        self.instance.user = user
        return user

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        user = cleaned.get("person")
        tenant = cleaned.get("tenant") or getattr(self.instance, "tenant", None)
        new = self.instance.pk is None and user is not None and tenant is not None and tenant.pk is not None
        if new and Membership.objects.filter(tenant=tenant, user=user).exists():
            self.add_error("person", "Already a member of this tenant: change the role on their membership.")
        leaving = cleaned.get("DELETE") or cleaned.get("role", Membership.Role.OWNER) != Membership.Role.OWNER
        if leaving and is_last_owner(self.instance):
            self.add_error("role" if not cleaned.get("DELETE") else None, LAST_OWNER)
        return cleaned


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
    form = form_for(Tenant, validation.tenant_validate)
    tenant_path = ""
    add_roles = delete_roles = NOBODY  # tenants are made and removed by platform staff
    fields_for_service = tuple(sorted(services.TENANT_FIELDS))
    list_display = ("slug", "name", "status", "requires_authorization", "created_at")
    list_filter = ("status", "requires_authorization")
    search_fields = ("slug", "name")
    inlines = [MembershipInline]
    pages = tenant_pages

    def get_urls(self) -> list[Any]:
        return [*self.pages.urls(self), *super().get_urls()]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Widening the outbound door lets a tenant's tools reach private networks, and suspending a tenant is a
        # sanction: platform staff decide both.
        readonly = tuple(super().get_readonly_fields(request, obj))
        return readonly if request.user.is_superuser else (*readonly, "status", "outbound_allowed_networks")

    def object_page_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:
        # The links to the pages other apps added (the change form's object tools show them).
        return {**tenant_page_context(request, obj), "object_pages": self.pages.links(obj)}

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
        adopt(obj, services.membership_add(tenant=obj.tenant, user=obj.user, role=obj.role))

    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        services.membership_remove(tenant=obj.tenant, user=obj.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Membership]) -> None:
        for membership in queryset.select_related("tenant", "user"):
            services.membership_remove(tenant=membership.tenant, user=membership.user)
