"""Invitations by e-mail: who may invite whom, the single-use expiring link bound to the invited address, resends
and revocations, the cap on waiting invitations, and acceptance by a new or an existing account."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from tenants import people
from tenants.models import Invitation, Membership, Tenant
from tests.admin_objects import person
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

LINK = re.compile(r"https://platform\.example/invite/([A-Za-z0-9_\-]+)")


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def link_for(token: str) -> str:
    return f"https://platform.example/invite/{token}"


def invite(tenant: Tenant, by: Any, email: str = "nadia@example.com", role: str = "admin") -> Invitation:
    return people.invitation_create(tenant=tenant, email=email, role=role, by=by, link_for=link_for)


def token_in(message: Any) -> str:
    match = LINK.search(message.body)
    assert match is not None, message.body
    return match.group(1)


def test_an_invitation_mails_a_link_whose_token_is_stored_only_as_a_digest(tenant: Tenant, mailoutbox: Any) -> None:
    owner = person(tenant, "owner", "olivia")

    invitation = invite(tenant, owner)

    [message] = mailoutbox
    token = token_in(message)
    assert message.to == ["nadia@example.com"]
    assert message.subject == "Invitation to Acme on the MCP platform"
    assert "olivia invites you to join Acme (acme) on the MCP platform as admin." in message.body
    assert token not in str(Invitation.objects.filter(pk=invitation.pk).values().get())
    assert people.invitation_find(token=token) == people.Found(invitation, people.InvitationState.PENDING)
    assert invitation.expires_at - invitation.sent_at == timedelta(days=7)


def test_accepting_creates_the_account_and_the_membership_with_the_invited_role(
    tenant: Tenant, mailoutbox: Any
) -> None:
    invite(tenant, person(tenant, "owner", "olivia"), role="admin")
    token = token_in(mailoutbox[0])

    user, membership = people.invitation_accept_new_account(
        token=token, username="nadia", password="a long and unusual phrase"
    )

    assert (user.email, user.check_password("a long and unusual phrase")) == ("nadia@example.com", True)
    assert (membership.tenant, membership.user, membership.role) == (tenant, user, "admin")
    stored = Invitation.objects.get()
    assert stored.accepted_by == user and stored.accepted_at is not None


def test_a_link_works_once(tenant: Tenant, mailoutbox: Any) -> None:
    invite(tenant, person(tenant, "owner", "olivia"))
    token = token_in(mailoutbox[0])
    people.invitation_accept_new_account(token=token, username="nadia", password="a long and unusual phrase")

    with pytest.raises(ValidationError, match=r"This invitation is accepted\."):
        people.invitation_accept(token=token, user=UserFactory(username="nadia2", email="nadia@example.com"))
    with pytest.raises(ValidationError, match=r"This invitation is accepted\."):
        people.invitation_accept_new_account(token=token, username="nadia3", password="a long and unusual phrase")
    assert people.invitation_find(token=token).state is people.InvitationState.ACCEPTED
    assert Membership.objects.filter(tenant=tenant).count() == 2


def test_an_expired_link_opens_nothing(tenant: Tenant, mailoutbox: Any) -> None:
    invitation = invite(tenant, person(tenant, "owner", "olivia"))
    Invitation.objects.filter(pk=invitation.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    token = token_in(mailoutbox[0])

    with pytest.raises(ValidationError, match=r"This invitation is expired\."):
        people.invitation_accept(token=token, user=UserFactory(username="nadia", email="nadia@example.com"))
    assert not Membership.objects.filter(user__username="nadia").exists()


@pytest.mark.parametrize(
    "tamper",
    [
        lambda t: t[:-1],
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),
        lambda t: t + "x",
        lambda t: "",
        lambda t: "x" * 500,
    ],
    ids=["cut", "changed", "longer", "empty", "huge"],
)
def test_a_tampered_link_opens_nothing(tenant: Tenant, mailoutbox: Any, tamper: Any) -> None:
    invite(tenant, person(tenant, "owner", "olivia"))
    tampered = tamper(token_in(mailoutbox[0]))

    assert people.invitation_find(token=tampered) == people.Found(None, people.InvitationState.UNKNOWN)
    with pytest.raises(ValidationError, match="not valid"):
        people.invitation_accept(token=tampered, user=UserFactory(username="nadia", email="nadia@example.com"))


def test_only_an_account_of_the_invited_address_accepts(tenant: Tenant, mailoutbox: Any) -> None:
    invite(tenant, person(tenant, "owner", "olivia"), email="Nadia@Example.com")
    token = token_in(mailoutbox[0])
    stranger = UserFactory(username="mallory", email="mallory@example.com")
    no_address = UserFactory(username="blank", email="")

    for user in (stranger, no_address):
        with pytest.raises(ValidationError, match=r"This invitation is for Nadia@example.com"):
            people.invitation_accept(token=token, user=user)
    assert not Membership.objects.filter(user__in=[stranger, no_address]).exists()

    invitee = UserFactory(username="nadia", email="nadia@EXAMPLE.com")
    assert people.invitation_accept(token=token, user=invitee).role == "admin"


def test_accepting_never_lowers_a_role_already_held(tenant: Tenant, mailoutbox: Any) -> None:
    invite(tenant, person(tenant, "owner", "olivia"), email="nadia@example.com", role="member")
    nadia = person(tenant, "owner", "nadia")  # made owner by platform staff while the invitation waited

    membership = people.invitation_accept(token=token_in(mailoutbox[0]), user=nadia)

    assert membership.role == "owner"
    assert Invitation.objects.get().accepted_by == nadia


@pytest.mark.parametrize(
    ("inviter_role", "allowed"),
    [("owner", {"owner", "admin", "member"}), ("admin", {"admin", "member"}), ("member", set())],
)
def test_who_may_invite_whom(tenant: Tenant, inviter_role: str, allowed: set[str], mailoutbox: Any) -> None:
    inviter = person(tenant, inviter_role, "ivy")

    for n, role in enumerate(("owner", "admin", "member")):
        if role in allowed:
            assert invite(tenant, inviter, email=f"p{n}@example.com", role=role).role == role
        else:
            with pytest.raises(ValidationError) as refused:
                invite(tenant, inviter, email=f"p{n}@example.com", role=role)
            assert set(refused.value.message_dict) <= {"role", "tenant"}
    assert len(mailoutbox) == len(allowed)


def test_platform_staff_invite_anyone_to_any_tenant(tenant: Tenant, mailoutbox: Any) -> None:
    root = person(None, None, "root", is_superuser=True, is_staff=True)

    assert invite(tenant, root, role="owner").role == "owner"
    assert "root invites you" in mailoutbox[0].body


def test_nobody_invites_to_a_tenant_they_hold_no_role_in(tenant: Tenant, other_tenant: Tenant) -> None:
    owner_elsewhere = person(other_tenant, "owner", "gus")

    with pytest.raises(ValidationError) as refused:
        invite(tenant, owner_elsewhere, role="member")

    assert refused.value.message_dict == {"tenant": ["You may not invite people to acme."]}
    assert not Invitation.objects.exists()


def test_an_address_is_invited_once_at_a_time_and_members_not_at_all(tenant: Tenant, mailoutbox: Any) -> None:
    owner = person(tenant, "owner", "olivia")
    invite(tenant, owner)

    with pytest.raises(ValidationError, match="already has an invitation waiting"):
        invite(tenant, owner, email="NADIA@example.com")
    with pytest.raises(ValidationError, match="already a member of this tenant"):
        invite(tenant, owner, email="olivia@example.com")
    with pytest.raises(ValidationError, match=r"Enter a valid e-mail address\."):
        invite(tenant, owner, email="not an address")
    assert len(mailoutbox) == 1


def test_waiting_invitations_of_a_tenant_are_capped(
    tenant: Tenant, mailoutbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(people, "PENDING_LIMIT", 2)
    owner = person(tenant, "owner", "olivia")
    first = invite(tenant, owner, email="a@example.com")
    invite(tenant, owner, email="b@example.com")

    with pytest.raises(ValidationError, match="acme has 2 invitations waiting"):
        invite(tenant, owner, email="c@example.com")
    people.invitation_revoke(invitation=first, by=owner)
    assert invite(tenant, owner, email="c@example.com").email == "c@example.com"


def test_a_resend_replaces_the_link_and_renews_the_lifetime(tenant: Tenant, mailoutbox: Any) -> None:
    owner = person(tenant, "owner", "olivia")
    invitation = invite(tenant, owner)
    old_token = token_in(mailoutbox[0])

    with pytest.raises(ValidationError, match="less than a minute ago"):
        people.invitation_resend(invitation=invitation, by=owner, link_for=link_for)
    Invitation.objects.filter(pk=invitation.pk).update(
        sent_at=timezone.now() - timedelta(days=8), expires_at=timezone.now() - timedelta(days=1)
    )
    resent = people.invitation_resend(invitation=invitation, by=owner, link_for=link_for)

    new_token = token_in(mailoutbox[1])
    assert new_token != old_token
    assert people.invitation_find(token=old_token).state is people.InvitationState.UNKNOWN
    assert people.invitation_find(token=new_token).state is people.InvitationState.PENDING
    assert resent.expires_at > timezone.now() + timedelta(days=6)


def test_a_revoked_invitation_opens_nothing_and_is_not_resent(tenant: Tenant, mailoutbox: Any) -> None:
    owner = person(tenant, "owner", "olivia")
    invitation = invite(tenant, owner)
    token = token_in(mailoutbox[0])

    assert people.invitation_revoke(invitation=invitation, by=owner) is True
    assert people.invitation_revoke(invitation=invitation, by=owner) is False

    with pytest.raises(ValidationError, match=r"This invitation is revoked\."):
        people.invitation_accept(token=token, user=UserFactory(username="nadia", email="nadia@example.com"))
    with pytest.raises(ValidationError, match="was revoked"):
        people.invitation_resend(invitation=invitation, by=owner, link_for=link_for)


def test_admins_manage_only_the_invitations_they_could_make(
    tenant: Tenant, other_tenant: Tenant, mailoutbox: Any
) -> None:
    owner, admin = person(tenant, "owner", "olivia"), person(tenant, "admin", "adam")
    for_owner = invite(tenant, owner, email="co-owner@example.com", role="owner")
    for_admin = invite(tenant, owner, email="helper@example.com", role="admin")
    elsewhere = invite(other_tenant, person(other_tenant, "owner", "gus"), email="x@example.com", role="member")

    with pytest.raises(PermissionDenied):
        people.invitation_revoke(invitation=for_owner, by=admin)
    with pytest.raises(PermissionDenied):
        people.invitation_revoke(invitation=elsewhere, by=owner)
    with pytest.raises(PermissionDenied):
        people.invitation_resend(invitation=elsewhere, by=admin, link_for=link_for)
    assert people.invitation_revoke(invitation=for_admin, by=admin) is True


def test_a_new_account_is_checked_by_djangos_validators_and_nothing_is_kept_on_refusal(
    tenant: Tenant, mailoutbox: Any
) -> None:
    invite(tenant, person(tenant, "owner", "olivia"))
    token = token_in(mailoutbox[0])

    with pytest.raises(ValidationError) as weak:
        people.invitation_accept_new_account(token=token, username="nadia", password="12345678")
    with pytest.raises(ValidationError) as taken:
        people.invitation_accept_new_account(token=token, username="olivia", password="a long and unusual phrase")

    assert "This password is entirely numeric." in weak.value.message_dict["password"]
    assert "A user with that username already exists." in taken.value.message_dict["username"]
    assert not get_user_model().objects.filter(username="nadia").exists()
    assert people.invitation_find(token=token).state is people.InvitationState.PENDING


def test_principals_read_as_people_in_one_query(django_assert_num_queries: Any) -> None:
    nadia = UserFactory(username="nadia", email="nadia@example.com")
    olivia = UserFactory(username="olivia", email="")
    principals = [
        str(nadia.pk),
        f"user:{olivia.pk}",
        f"user:{nadia.pk} client:abc",
        "client:cli-1",
        "anonymous",
        "",
        "99999",
    ]

    with django_assert_num_queries(1):
        named = people.people_of(principals)

    assert {p: str(named[p]) for p in principals} == {
        str(nadia.pk): "nadia (nadia@example.com)",
        f"user:{olivia.pk}": "olivia",
        f"user:{nadia.pk} client:abc": "nadia (nadia@example.com)",
        "client:cli-1": "client cli-1",
        "anonymous": "anonymous",
        "": "—",
        "99999": "deleted account #99999",
    }


def test_a_tenant_name_with_line_breaks_makes_a_one_line_subject(tenant: Tenant, mailoutbox: Any) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(name="Acme\nBcc: mallory@example.com")
    tenant.refresh_from_db()

    invite(tenant, person(tenant, "owner", "olivia"))

    assert mailoutbox[0].subject == "Invitation to Acme Bcc: mallory@example.com on the MCP platform"
    assert mailoutbox[0].recipients() == ["nadia@example.com"]
