"""The membership form of the admin: a person is named by username or e-mail (the platform's list of people is
never offered), a membership keeps its person and tenant for life, and a tenant keeps at least one owner."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q

from tenants.models import Membership

NOT_FOUND = "No single account has this username or e-mail address."
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
        help_text="Of someone who already has an account on this platform.",
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
