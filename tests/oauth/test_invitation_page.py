"""The page an invitation's link opens: a new account for the invited address, or a sign-in with the account of
that address, then the admin; a clear page for a link that opens nothing; CSRF and the invited address enforced."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tenants import people
from tenants.models import Invitation, Membership, Tenant
from tests.factories import MembershipFactory, TenantFactory, UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "a long and unusual phrase"


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def acme() -> Tenant:
    return TenantFactory(slug="acme", name="Acme support")


@pytest.fixture
def owner(acme: Tenant) -> Any:
    user = UserFactory(username="olivia", email="olivia@example.com")
    MembershipFactory(tenant=acme, user=user, role="owner")
    return user


def invitation_url(acme: Tenant, owner: Any, email: str = "nadia@example.com", role: str = "admin") -> str:
    made: list[str] = []
    people.invitation_create(tenant=acme, email=email, role=role, by=owner, link_for=made.append)
    return reverse("account-invitation", args=made)


def test_a_newcomer_creates_their_account_and_lands_in_the_admin_of_their_tenant(acme: Tenant, owner: Any) -> None:
    browser = Client()
    url = invitation_url(acme, owner)

    page = browser.get(url)
    joined = browser.post(
        url, {"intent": "create", "username": "nadia", "password1": PASSWORD, "password2": PASSWORD}, follow=True
    )

    text = page.content.decode()
    assert "Join Acme support" in text and "nadia@example.com" in text and "Create your account" in text
    assert "default-src 'none'" in page["Content-Security-Policy"]
    assert joined.redirect_chain == [(reverse("admin:index"), 302)]
    landing = joined.content.decode()
    assert "You joined Acme support as admin." in landing
    assert f'href="{reverse("admin:tenants_tenant_change", args=[acme.pk])}">Acme support</a>' in landing
    nadia = get_user_model().objects.get(username="nadia")
    assert nadia.email == "nadia@example.com"
    assert Membership.objects.get(user=nadia).role == "admin"
    assert browser.get(url).status_code == 410  # the link is spent


def test_a_refused_account_keeps_what_was_typed_and_says_why(acme: Tenant, owner: Any) -> None:
    browser = Client()
    url = invitation_url(acme, owner)

    weak = browser.post(
        url, {"intent": "create", "username": "nadia", "password1": "12345678", "password2": "12345678"}
    )
    differ = browser.post(url, {"intent": "create", "username": "nadia", "password1": PASSWORD, "password2": "x"})
    taken = browser.post(url, {"intent": "create", "username": "olivia", "password1": PASSWORD, "password2": PASSWORD})

    assert weak.status_code == differ.status_code == taken.status_code == 400
    assert 'value="nadia"' in weak.content.decode()
    assert "This password is entirely numeric." in weak.content.decode()
    assert "The two passwords differ." in differ.content.decode()
    assert "A user with that username already exists." in taken.content.decode()
    assert not get_user_model().objects.filter(username="nadia").exists()
    assert Invitation.objects.get().accepted_at is None


def test_someone_with_an_account_of_the_address_signs_in_to_accept(acme: Tenant, owner: Any) -> None:
    UserFactory(username="nadia", email="Nadia@example.com", password=PASSWORD)
    UserFactory(username="mallory", email="mallory@example.com", password=PASSWORD)
    browser = Client()
    url = invitation_url(acme, owner, role="member")

    page = browser.get(url)
    wrong = browser.post(url, {"intent": "sign_in", "username": "mallory", "password": PASSWORD})
    bad = browser.post(url, {"intent": "sign_in", "username": "nadia", "password": "nope"})
    joined = browser.post(url, {"intent": "sign_in", "username": "nadia", "password": PASSWORD})

    assert "Sign in to accept" in page.content.decode() and "Create your account" not in page.content.decode()
    assert "the account mallory has another e-mail address" in wrong.content.decode()
    assert "Please enter the correct username and password" in bad.content.decode()
    assert joined.status_code == 302 and joined["Location"] == reverse("oauth-connected-apps")  # members: no admin
    assert Membership.objects.get(user__username="nadia", tenant=acme).role == "member"
    assert not Membership.objects.filter(user__username="mallory").exists()


def test_a_signed_in_person_accepts_only_with_the_invited_address(acme: Tenant, owner: Any) -> None:
    url = invitation_url(acme, owner)
    mallory, nadia = Client(), Client()
    mallory.force_login(UserFactory(username="mallory", email="mallory@example.com"))
    nadia.force_login(UserFactory(username="nadia", email="nadia@example.com"))

    refused = mallory.post(url, {"intent": "accept"})
    accepted = nadia.post(url, {"intent": "accept"})

    assert (
        refused.status_code == 200 and "Only an account with the invited address can accept" in refused.content.decode()
    )
    assert accepted.status_code == 302 and accepted["Location"] == reverse("admin:index")
    assert list(Membership.objects.filter(tenant=acme).values_list("user__username", flat=True).order_by("pk")) == [
        "olivia",
        "nadia",
    ]


def test_accepting_needs_a_csrf_token(acme: Tenant, owner: Any) -> None:
    url = invitation_url(acme, owner)
    browser = Client(enforce_csrf_checks=True)

    response = browser.post(
        url, {"intent": "create", "username": "nadia", "password1": PASSWORD, "password2": PASSWORD}
    )

    assert response.status_code == 403
    assert not get_user_model().objects.filter(username="nadia").exists()


def test_a_link_that_opens_nothing_says_why(acme: Tenant, owner: Any) -> None:
    browser = Client()
    expired, revoked = invitation_url(acme, owner, "e@example.com"), invitation_url(acme, owner, "r@example.com")
    Invitation.objects.filter(email="e@example.com").update(expires_at=timezone.now() - timedelta(minutes=1))
    people.invitation_revoke(invitation=Invitation.objects.get(email="r@example.com"), by=owner)
    tampered = invitation_url(acme, owner, "t@example.com")[:-2] + "x/"

    pages = {
        name: browser.get(url) for name, url in (("expired", expired), ("revoked", revoked), ("tampered", tampered))
    }

    assert {name: page.status_code for name, page in pages.items()} == {"expired": 410, "revoked": 410, "tampered": 404}
    assert "This invitation has expired" in pages["expired"].content.decode()
    assert "This invitation was withdrawn" in pages["revoked"].content.decode()
    assert "This invitation link is not valid" in pages["tampered"].content.decode()
    attempt = browser.post(expired, {"intent": "create", "username": "e", "password1": PASSWORD, "password2": PASSWORD})
    assert attempt.status_code == 410 and not get_user_model().objects.filter(username="e").exists()
