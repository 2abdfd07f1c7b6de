"""The platform's admin site: open to whoever administers a tenant (not to a staff flag), and closed by default
to any admin class that does not declare how its model reaches a tenant."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.db.models import Model
from django.db.models.base import ModelBase
from django.http import HttpRequest

from tenants.admin_policy import admin_scope, admin_scope_for
from tenants.admin_scoping import TenantScopedAdmin, platform_only


class TenantAdminAuthenticationForm(AdminAuthenticationForm):
    """Signs in owners and admins of a tenant and superusers; members and everyone else are refused alike."""

    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "invalid_login": (
            "Please enter the correct %(username)s and password of an account that administers a tenant. "
            "Note that both fields may be case-sensitive."
        ),
    }

    def confirm_login_allowed(self, user: Any) -> None:
        if not user.is_active or not admin_scope_for(user).any:
            raise ValidationError(
                self.error_messages["invalid_login"],
                code="invalid_login",
                params={"username": self.username_field.verbose_name},
            )


class TenantAdminSite(admin.AdminSite):
    site_header = "MCP platform administration"
    site_title = "MCP platform admin"
    index_title = "Your tenants"
    login_form = TenantAdminAuthenticationForm

    def has_permission(self, request: HttpRequest) -> bool:
        # The scope is resolved here, once, before any admin view runs; the views read it from the request.
        return bool(request.user.is_active and admin_scope(request).any)

    def register(
        self,
        model_or_iterable: ModelBase | Iterable[type[Model]],
        admin_class: type[admin.ModelAdmin] | None = None,
        **options: Any,
    ) -> None:
        # An admin class that is not scoped (Django's users and groups, the OAuth toolkit's tokens) is platform
        # staff's: failing closed means a forgotten declaration hides a page rather than opens one.
        chosen = admin_class or admin.ModelAdmin
        if not issubclass(chosen, TenantScopedAdmin):
            chosen = platform_only(chosen)
        super().register(model_or_iterable, chosen, **options)
