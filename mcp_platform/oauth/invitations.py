"""The page an invitation's link opens: the invitee creates their account (the e-mail address fixed to the
invited one) or signs in with the account of that address, accepts, and lands in the admin of their tenant.
Anything the link cannot open (unknown, tampered with, used, revoked, expired) is a page that says which."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth import authenticate, get_user_model, login, password_validation
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from mcp_platform.oauth.headers import page_policy
from tenants import people
from tenants.models import Invitation, Membership

CLOSED = {
    people.InvitationState.UNKNOWN: (
        "This invitation link is not valid",
        "The link may be cut short or mistyped, or the invitation was sent again with a new link. Ask the person "
        "who invited you to resend it.",
        404,
    ),
    people.InvitationState.ACCEPTED: (
        "This invitation was already accepted",
        "An invitation link works once. Sign in to the admin with the account that accepted it.",
        410,
    ),
    people.InvitationState.REVOKED: (
        "This invitation was withdrawn",
        "The person who invited you revoked it. Ask them for a new invitation if you still need access.",
        410,
    ),
    people.InvitationState.EXPIRED: (
        "This invitation has expired",
        "Invitations are valid for 7 days. Ask the person who invited you to resend it.",
        410,
    ),
}

PASSWORD_MAX_LENGTH = 4096  # Django's validators and hashers take any length; a form need not


class NewAccountForm(forms.Form):
    username = forms.CharField(
        max_length=150,
        help_text="Letters, digits and @ . + - _ only. You sign in with it.",
        widget=forms.TextInput(attrs={"autocomplete": "username", "autocapitalize": "none", "spellcheck": "false"}),
    )
    password1 = forms.CharField(
        label="Password",
        max_length=PASSWORD_MAX_LENGTH,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )
    password2 = forms.CharField(
        label="Password again",
        max_length=PASSWORD_MAX_LENGTH,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        first, second = cleaned.get("password1"), cleaned.get("password2")
        if first and second and first != second:
            self.add_error("password2", "The two passwords differ.")
        return cleaned


class ExistingAccountForm(forms.Form):
    username = forms.CharField(
        max_length=150,
        widget=forms.TextInput(attrs={"autocomplete": "username", "autocapitalize": "none", "spellcheck": "false"}),
    )
    password = forms.CharField(
        max_length=PASSWORD_MAX_LENGTH,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )


def _landing(request: HttpRequest, membership: Membership) -> HttpResponse:
    tenant = membership.tenant
    messages.success(request, f"You joined {tenant.name} as {membership.get_role_display().lower()}.")
    if membership.role in (Membership.Role.OWNER, Membership.Role.ADMIN):
        return redirect("admin:index")
    return redirect("oauth-connected-apps")


def _account_of_address(invitation: Invitation) -> bool:
    return get_user_model()._default_manager.filter(email__iexact=invitation.email, is_active=True).exists()


def _refused(form: forms.Form, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


@page_policy
@require_http_methods(["GET", "HEAD", "POST"])
def invitation_page(request: HttpRequest, token: str) -> HttpResponse:
    found = people.invitation_find(token=token)
    invitation = found.invitation
    if invitation is None or found.state is not people.InvitationState.PENDING:
        title, explanation, status = CLOSED[found.state]
        closed = {"title": title, "explanation": explanation}
        return render(request, "registration/invitation_closed.html", closed, status=status)

    context: dict[str, Any] = {"invitation": invitation, "tenant": invitation.tenant}
    intent = request.POST.get("intent", "") if request.method == "POST" else ""
    user: Any = request.user
    if user.is_authenticated:
        context["wrong_address"] = not people.same_address(user, invitation)
        if intent == "accept" and not context["wrong_address"]:
            try:
                return _landing(request, people.invitation_accept(token=token, user=user))
            except ValidationError as exc:
                context["errors"] = exc.messages
        return render(request, "registration/invitation.html", context)

    existing = _account_of_address(invitation)
    context["existing"] = existing
    if existing:
        form: forms.Form = ExistingAccountForm(request.POST if intent == "sign_in" else None)
        if intent == "sign_in" and form.is_valid():
            account = authenticate(
                request, username=form.cleaned_data["username"], password=form.cleaned_data["password"]
            )
            if account is None:
                form.add_error(None, "Please enter the correct username and password (both are case-sensitive).")
            else:
                try:
                    membership = people.invitation_accept(token=token, user=account)
                except ValidationError as exc:
                    _refused(form, exc)
                else:
                    login(request, account)
                    return _landing(request, membership)
    else:
        form = NewAccountForm(request.POST if intent == "create" else None)
        if intent == "create" and form.is_valid():
            try:
                account, membership = people.invitation_accept_new_account(
                    token=token, username=form.cleaned_data["username"], password=form.cleaned_data["password1"]
                )
            except ValidationError as exc:
                if hasattr(exc, "error_dict"):  # the new password's refusals belong under its first box
                    exc = ValidationError(
                        {("password1" if k == "password" else k): v for k, v in exc.error_dict.items()}
                    )
                _refused(form, exc)
            else:
                login(request, account)
                return _landing(request, membership)
    context["form"] = form
    status = 400 if form.is_bound and form.errors else 200
    return render(request, "registration/invitation.html", context, status=status)
