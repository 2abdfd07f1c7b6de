"""Admin of people's connections (``PersonalCredential``): which members gave which of the tenant's tools their own
OAuth connection or key, its status and when it was last used, filtered by what it is for and by status; an admin
disconnects one (removed through ``tenants.connections`` and revoked at the upstream where it offers revocation).
Nothing is added or edited here, and no value is ever shown."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse

from tenants.admin.policy import ADMINISTERING, admin_scope
from tenants.admin.scoping import NOBODY, Roles, TenantScopedAdmin
from tenants.connections import flow
from tenants.connections.listing import target_titles
from tenants.models import PersonalCredential
from tenants.people import Person

TITLE_ATTRIBUTE = "_target_title"
# Targets offered by the filter: at most this many (the most held first).
FILTER_CHOICES = 50


def member_of(credential: PersonalCredential) -> str:
    """The member as the admin's other pages name people: ``username (e-mail)``."""
    user = credential.user
    return str(Person(user.get_username(), user.email))


def title_of(credential: PersonalCredential) -> str:
    """What the credential is for ("upstream github"): named with its page's other rows, else alone."""
    title = getattr(credential, TITLE_ATTRIBUTE, None)
    if title is None:
        key = (credential.tenant_id, credential.target)
        title = target_titles([key])[key]
    return str(title)


class TargetFilter(admin.SimpleListFilter):
    """By what the credentials are for, named as pages name targets; only the targets of rows the person sees."""

    title = "what it is for"
    parameter_name = "target"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        keys = list(model_admin.get_queryset(request).values_list("tenant_id", "target").distinct()[:FILTER_CHOICES])
        titles = target_titles(keys)
        choices = {target: titles[(tenant_id, target)] for tenant_id, target in keys}
        return sorted(choices.items(), key=lambda choice: (choice[1].casefold(), choice[0]))

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(target=value)


@admin.register(PersonalCredential)
class PersonalCredentialAdmin(TenantScopedAdmin):
    """Members' connections in the tenants the person administers: seen and disconnected, never added, edited or
    read (the sealed values are no field of any page)."""

    tenant_path = "tenant"
    add_roles = change_roles = delete_roles = NOBODY  # made by the person; removed by disconnecting
    disconnect_roles: Roles = ADMINISTERING
    list_display = ("member", "target_title", "kind", "status", "created_at", "last_used_at", "tenant")
    list_filter = (TargetFilter, "status", "kind", "tenant")
    search_fields = ("user__username", "user__email")
    list_select_related = ("tenant", "user")
    fields = (
        "tenant",
        "member",
        "target_title",
        "target",
        "kind",
        "status",
        "last_error",
        "scope",
        "issuer",
        "expires_at",
        "created_at",
        "refreshed_at",
        "last_used_at",
    )
    readonly_fields = fields
    actions = ["disconnect"]
    change_form_template = "admin/tenants/personalcredential/change_form.html"

    @admin.display(description="member", ordering="user__username")
    def member(self, credential: PersonalCredential) -> str:
        return member_of(credential)

    @admin.display(description="for", ordering="target")
    def target_title(self, credential: PersonalCredential) -> str:
        return title_of(credential)

    def get_list_display(self, request: HttpRequest) -> Any:
        # Someone who administers one tenant learns nothing from a tenant column.
        scope = admin_scope(request)
        if not scope.everything and len(scope.tenant_ids()) == 1:
            return tuple(field for field in self.list_display if field != "tenant")
        return self.list_display

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        base: type[ChangeList] = super().get_changelist(request, **kwargs)

        class TitledChangeList(base):  # type: ignore[misc, valid-type]
            def get_results(self, request: HttpRequest) -> None:
                super().get_results(request)
                rows = list(self.result_list)
                titles = target_titles((row.tenant_id, row.target) for row in rows)
                for row in rows:
                    setattr(row, TITLE_ATTRIBUTE, titles[(row.tenant_id, row.target)])

        return TitledChangeList

    def may_disconnect(self, request: HttpRequest, credential: PersonalCredential | None = None) -> bool:
        tenant_id = credential.tenant_id if credential is not None else None
        return self.may(admin_scope(request), self.disconnect_roles, tenant_id, model_level=credential is None)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return super().get_actions(request) if self.may_disconnect(request) else {}

    def object_page_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:
        return {"may_disconnect": self.may_disconnect(request, obj)}

    def get_urls(self) -> list[Any]:
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        view = self.admin_site.admin_view(self.disconnect_view)
        return [path("<path:object_id>/disconnect/", view, name=f"{prefix}_disconnect"), *super().get_urls()]

    def disconnect_one(self, request: HttpRequest, credential: PersonalCredential) -> None:
        """Remove ``credential`` (the activity log names the admin who did) and revoke it at the upstream where it
        can; a message says what the upstream answered."""
        who, title = member_of(credential), title_of(credential)
        outcome = flow.disconnect(credential=credential, by_user_id=int(request.user.pk))  # type: ignore[arg-type]
        if outcome == flow.KEY_REMOVED:
            self.message_user(request, f"Removed the key of {who} for {title}.")
        elif outcome == flow.REVOKED:
            self.message_user(request, f"Disconnected {who} from {title}. The upstream confirmed the revocation.")
        else:
            self.message_user(
                request,
                f"Disconnected {who} from {title}: the platform no longer holds their tokens. The upstream did not "
                "confirm a revocation (it offers none, or did not answer); they may work there until they expire.",
                level=messages.WARNING,
            )

    @admin.action(description="Disconnect the selected connections")
    def disconnect(self, request: HttpRequest, queryset: QuerySet[PersonalCredential]) -> None:
        for credential in queryset.select_related("user", "tenant"):
            if self.may_disconnect(request, credential):
                self.disconnect_one(request, credential)

    def disconnect_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """One credential's Disconnect button (POST). Another tenant's credential, or a missing one, is a 404."""
        credential = self.get_object(request, unquote(object_id))
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.may_disconnect(request, credential):
            raise PermissionDenied
        self.disconnect_one(request, credential)
        return HttpResponseRedirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist"))
