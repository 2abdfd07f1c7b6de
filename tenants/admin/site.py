"""The platform's admin site: open to whoever administers a tenant (not to a staff flag), and closed by default
to any admin class that does not declare how its model reaches a tenant."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.contenttypes.models import ContentType
from django.contrib.contenttypes.views import shortcut
from django.core.exceptions import ValidationError
from django.db.models import Model
from django.db.models.base import ModelBase
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, URLPattern, URLResolver, path, reverse

from tenants.admin.policy import ADMINISTERING, admin_scope, admin_scope_for
from tenants.admin.scoping import TenantScopedAdmin, platform_only
from tenants.history.revisions import acting_as
from tenants.models import Membership, Tenant


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


@dataclass(frozen=True)
class YourTenant:
    """One line of the index's "Your tenants": a tenant the person holds a role in, and where to go from there."""

    tenant: Tenant
    role: str
    page: str
    tools: str
    invite: str


def your_tenants(request: HttpRequest) -> list[YourTenant]:
    """The tenants the signed-in person administers by membership (a superuser's own memberships), by name."""
    roles = dict(
        Membership.objects.filter(user_id=request.user.pk or 0, role__in=ADMINISTERING).values_list("tenant_id", "role")
    )
    labels = dict(Membership.Role.choices)
    tools, invite = reverse("admin:tenants_tool_changelist"), reverse("admin:tenants_invitation_add")
    return [
        YourTenant(
            tenant=tenant,
            role=str(labels[roles[tenant.pk]]),
            page=reverse("admin:tenants_tenant_change", args=[tenant.pk]),
            tools=f"{tools}?tenant__id__exact={tenant.pk}",
            invite=f"{invite}?tenant={tenant.pk}",
        )
        for tenant in Tenant.objects.filter(pk__in=roles).order_by("name", "slug")
    ]


class TenantAdminSite(admin.AdminSite):
    site_header = "MCP platform administration"
    site_title = "MCP platform admin"
    index_title = "Your tenants"
    index_template = "admin/platform_index.html"
    login_form = TenantAdminAuthenticationForm

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> TemplateResponse:
        context = {**(extra_context or {}), "your_tenants": your_tenants(request)}
        if request.user.is_superuser:
            context["all_tenants_count"] = Tenant.objects.count()
        return super().index(request, context)

    def admin_view(self, view: Callable[..., Any], cacheable: bool = False) -> Any:
        # Every admin page acts for the person signed in: a revision of the catalog's history opened by what the page
        # calls (a service, an import) is theirs.
        @functools.wraps(view)
        def acting(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            with acting_as(request.user):
                return view(request, *args, **kwargs)

        return super().admin_view(acting, cacheable)

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

    def get_urls(self) -> list[URLResolver | URLPattern]:
        # "View on site" is the one site-level page that takes any model's row: it gets the scope too.
        urls = super().get_urls()
        mine = path(
            "r/<int:content_type_id>/<path:object_id>/", self.admin_view(self.view_on_site), name="view_on_site"
        )
        return [mine if getattr(url, "name", None) == "view_on_site" else url for url in urls]

    def view_on_site(self, request: HttpRequest, content_type_id: int, object_id: str) -> HttpResponse:
        """Django's redirect to a row's public page, for rows the person may see; any other is a 404 alike."""
        content_type = ContentType.objects.filter(pk=content_type_id).first()
        model = content_type.model_class() if content_type is not None else None
        model_admin = self._registry.get(model) if model is not None else None
        try:
            visible = model_admin is not None and model_admin.get_queryset(request).filter(pk=object_id).exists()
            if not visible:
                raise Http404("No such page.")
            return shortcut(request, content_type_id, object_id)
        except (ValueError, ValidationError, NoReverseMatch):
            raise Http404("No such page.") from None


# The one site: Django's ``admin.site`` is this instance (``PlatformAdminConfig.default_site`` names
# ``platform_site``, which returns it). Importing this module runs the package's ``__init__``, whose admin classes
# register on ``admin.site`` while Django is still setting it up; because each set-up returns this same object,
# none of those registrations is lost.
PLATFORM_SITE = TenantAdminSite()


def platform_site() -> TenantAdminSite:
    """The platform's admin site (Django's ``admin.site``)."""
    return PLATFORM_SITE
