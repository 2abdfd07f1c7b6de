"""Admin for invitations: owners and admins invite people by e-mail with the role chosen up front, and see, resend
and revoke the invitations of their tenants (in bulk from the list, or one at a time from the tenant page). The rules
(who may invite whom, the cap, the resend interval, the link) are ``tenants.people``'s; this page only asks them."""

from __future__ import annotations

import logging
import smtplib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils import timezone

from mcp_infra.addresses import base_url_from_request
from tenants import people
from tenants.admin.policy import ADMINISTERING, OWNER, admin_scope
from tenants.admin.scoping import NOBODY, TenantScopedAdmin
from tenants.admin.service_backed import adopt
from tenants.models import Invitation, Membership

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

ROLE_HELP = (
    "Owners manage members and invitations; admins run the tenant's tools, resources and prompts; members use the "
    "tenant's endpoint and have no admin."
)


def _person(request: HttpRequest) -> User:
    return cast("User", request.user)  # the admin site lets signed-in people only in


def link_maker(request: HttpRequest) -> people.LinkFor:
    """The absolute address of an invitation's page, for the e-mail."""
    base = base_url_from_request(request)
    return lambda token: base + reverse("account-invitation", args=[token])


class InvitationForm(forms.ModelForm):
    """Tenant, address and role; the service's own check runs in ``clean`` so every refusal shows on the form."""

    inviter: Any = None  # the signed-in person, set by the admin per request
    offered_roles: tuple[str, ...] = tuple(Membership.Role.values)  # narrowed per request: admins invite no owner

    class Meta:
        model = Invitation
        fields = ("tenant", "email", "role")
        help_texts = {
            "email": "The invitation goes to this address, and only an account with this address can accept it.",
            "role": ROLE_HELP,
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        role = self.fields["role"]
        assert isinstance(role, forms.ChoiceField)
        role.choices = [
            ("", "---------"),
            *((v, label) for v, label in Membership.Role.choices if v in self.offered_roles),
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        tenant, email, role = cleaned.get("tenant"), cleaned.get("email"), cleaned.get("role")
        if tenant is not None and email and role:
            try:
                cleaned["email"] = people.invitation_validate(tenant=tenant, email=email, role=role, by=self.inviter)
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    self.add_error(field if field in self.fields else None, errors)
        return cleaned


class StateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(state.value, state.value.capitalize()) for state in people.InvitationState if state.value != "unknown"]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        value = self.value()
        open_ = Q(accepted_at__isnull=True, revoked_at__isnull=True)
        match value:
            case "pending":
                return queryset.filter(open_, expires_at__gt=now)
            case "expired":
                return queryset.filter(open_, expires_at__lte=now)
            case "accepted":
                return queryset.filter(accepted_at__isnull=False)
            case "revoked":
                return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(Invitation)
class InvitationAdmin(TenantScopedAdmin):
    """Invitations of the tenants the person administers; owners and admins invite, resend and revoke (admins not
    owners' invitations)."""

    form = InvitationForm
    tenant_path = "tenant"
    add_roles = ADMINISTERING
    change_roles = delete_roles = NOBODY  # an invitation is resent or revoked, never edited; it stays on record
    list_display = ("email", "tenant", "role", "state", "invited_by", "sent_at", "expires_at")
    list_filter = (StateFilter, "role", "tenant")
    search_fields = ("email",)
    list_select_related = ("tenant", "invited_by")
    readonly_fields = (
        "tenant",
        "email",
        "role",
        "state",
        "invited_by",
        "created_at",
        "sent_at",
        "expires_at",
        "accepted_at",
        "accepted_by",
        "revoked_at",
    )
    actions = ["resend", "revoke"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return self.readonly_fields if obj is not None else ()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return self.readonly_fields if obj is not None else ("tenant", "email", "role")

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        if obj is not None:
            return form
        scope = admin_scope(request)
        roles = [value for value, _ in Membership.Role.choices]
        if not scope.everything and OWNER not in scope.roles.values():
            roles = [role for role in roles if role != OWNER]
        attributes = {"inviter": _person(request), "offered_roles": tuple(roles), "__module__": form.__module__}
        return type(form.__name__, (form,), attributes)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return super().get_actions(request) if admin_scope(request).holds(ADMINISTERING) else {}

    @admin.display(description="state")
    def state(self, invitation: Invitation) -> str:
        return people.invitation_state(invitation).value.capitalize()

    def save_model(self, request: HttpRequest, obj: Invitation, form: forms.ModelForm, change: bool) -> None:
        try:
            stored = people.invitation_create(
                tenant=obj.tenant, email=obj.email, role=obj.role, by=_person(request), link_for=link_maker(request)
            )
        except (OSError, smtplib.SMTPException) as exc:
            # The row is stored before the mail goes: it can be resent once the mail server answers.
            logger.warning("invitation e-mail not sent: %s", type(exc).__name__)
            stored = Invitation.objects.filter(tenant=obj.tenant, email__iexact=obj.email).first() or obj
            self.message_user(
                request,
                "The invitation is saved but its e-mail could not be sent: resend it later.",
                level=messages.ERROR,
            )
        adopt(obj, stored)

    def get_urls(self) -> list[Any]:
        # One invitation's resend and revoke, posted from the tenant page's list of pending invitations.
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/resend/", view(self.resend_view), name=f"{prefix}_resend"),
            path("<path:object_id>/revoke/", view(self.revoke_view), name=f"{prefix}_revoke"),
            *super().get_urls(),
        ]

    def resend_one(self, request: HttpRequest, invitation: Invitation) -> bool:
        """Send ``invitation`` again through the service; a refusal becomes a message naming the address."""
        try:
            people.invitation_resend(invitation=invitation, by=_person(request), link_for=link_maker(request))
        except (ValidationError, PermissionDenied) as exc:
            text = " ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
            self.message_user(request, f"{invitation.email}: {text}", level=messages.WARNING)
            return False
        except (OSError, smtplib.SMTPException) as exc:
            logger.warning("invitation e-mail not sent: %s", type(exc).__name__)
            self.message_user(
                request, f"{invitation.email}: the e-mail could not be sent: resend it later.", level=messages.ERROR
            )
            return False
        return True

    def revoke_one(self, request: HttpRequest, invitation: Invitation) -> bool:
        try:
            revoked = people.invitation_revoke(invitation=invitation, by=_person(request))
        except PermissionDenied as exc:
            self.message_user(request, f"{invitation.email}: {exc}", level=messages.WARNING)
            return False
        if not revoked:
            self.message_user(request, f"{invitation.email}: it was already accepted or revoked.", messages.WARNING)
        return revoked

    @admin.action(description="Resend the selected invitations (a new link; the old one stops working)")
    def resend(self, request: HttpRequest, queryset: QuerySet[Invitation]) -> None:
        sent = sum(self.resend_one(request, i) for i in queryset.select_related("tenant", "invited_by"))
        if sent:
            self.message_user(request, f"Sent {sent} invitation{'s' if sent != 1 else ''} again.")

    @admin.action(description="Revoke the selected invitations")
    def revoke(self, request: HttpRequest, queryset: QuerySet[Invitation]) -> None:
        revoked = sum(self.revoke_one(request, invitation) for invitation in queryset)
        self.message_user(request, f"Revoked {revoked} invitation{'s' if revoked != 1 else ''}.")

    def resend_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._one(request, object_id, self.resend_one, "Sent the invitation of {} again.")

    def revoke_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._one(request, object_id, self.revoke_one, "Revoked the invitation of {}.")

    def _one(
        self, request: HttpRequest, object_id: str, act: Callable[[HttpRequest, Invitation], bool], done: str
    ) -> HttpResponse:
        """Resend or revoke one invitation (POST), then back to its tenant's page. Another tenant's invitation, or a
        missing one, is a 404 whatever the method."""
        invitation = self.get_object(request, unquote(object_id))
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if act(request, invitation):
            self.message_user(request, done.format(invitation.email))
        back = reverse("admin:tenants_tenant_change", args=[invitation.tenant_id])
        return HttpResponseRedirect(f"{back}#pending-invitations")
