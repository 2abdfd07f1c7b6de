"""A person's accounts in tools on their Connected apps page: listed in every workspace with what each is for, its
kind, status and dates; disconnected (revoked at the upstream where it offers revocation), removed or replaced by
POST with CSRF; another person's row is a 404."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs

import pytest
from django.conf import settings
from django.test import Client, override_settings
from django.utils import timezone

from tenants.connections import services
from tenants.models import ConnectLink, PersonalCredential
from tests.factories import MembershipFactory, UserFactory
from tests.loopback_http import LoopbackServer, loopback_server
from tests.tenants.connections.stored import ACCESS, KEY, REFRESH, key_stored, key_tool, oauth_stored, oauth_upstream

pytestmark = pytest.mark.django_db

LOOPBACK_ALLOWED = override_settings(
    MCP_PLATFORM={**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]},
)


@pytest.fixture
def upstream_as() -> Iterator[LoopbackServer]:
    with loopback_server() as server:
        yield server


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_page_lists_the_persons_accounts_in_every_workspace_and_no_one_elses(acme, globex, member, browser):
    MembershipFactory(user=member, tenant=globex)
    weather = key_tool(acme)
    upstream = oauth_upstream(globex, revocation=None)
    key_stored(acme, member, weather)
    oauth = oauth_stored(globex, member, upstream)
    PersonalCredential.objects.filter(pk=oauth.pk).update(
        status=PersonalCredential.Status.NEEDS_PERSON, last_used_at=timezone.now()
    )
    key_stored(acme, UserFactory(username="bob"), key_tool(acme, "bobs_tool"))

    html = browser.get("/account/apps/").content.decode()
    words = text(html)

    assert '<h2 id="tool-accounts-title">Your accounts in tools</h2>' in html
    assert html.count('<h3 id="tool-account-') == 2
    assert "Tool weather on Acme" in words and "Upstream github on Globex" in words
    assert "Kind Personal key" in words and "Kind OAuth connection" in words
    assert "Status Connected" in words and "Status Needs reconnecting" in words
    assert "Last used Not yet" in words
    assert "bobs_tool" not in html
    assert KEY not in html and ACCESS not in html and REFRESH not in html
    assert 'aria-label="Replace your key for tool weather on Acme"' in html
    assert 'aria-label="Remove your key for tool weather on Acme"' in html
    assert 'aria-label="Reconnect your account for upstream github on Globex"' in html
    assert 'aria-label="Disconnect your account for upstream github on Globex"' in html


def test_a_person_with_no_accounts_is_told_where_they_will_show(member, browser):
    html = browser.get("/account/apps/").content.decode()
    assert "No accounts yet." in html and '<h3 id="tool-account-' not in html


def test_an_account_of_a_removed_item_still_shows_and_can_be_removed(acme, member, browser):
    weather = key_tool(acme)
    credential = key_stored(acme, member, weather)
    weather.delete()

    assert "A removed item" in browser.get("/account/apps/").content.decode()
    browser.post(f"/account/apps/accounts/{credential.pk}/disconnect/")
    assert not PersonalCredential.objects.exists()


def test_removing_a_key_deletes_it_and_says_so(acme, member, browser):
    credential = key_stored(acme, member, key_tool(acme))

    response = browser.post(f"/account/apps/accounts/{credential.pk}/disconnect/", follow=True)

    assert response.redirect_chain == [("/account/apps/", 302)]
    assert "Your key for tool weather on Acme is removed." in response.content.decode()
    assert not PersonalCredential.objects.exists()


@LOOPBACK_ALLOWED
def test_disconnecting_revokes_the_tokens_at_the_upstream_and_says_it_confirmed(acme, member, browser, upstream_as):
    upstream = oauth_upstream(acme, revocation=f"{upstream_as.base}/hello")
    credential = oauth_stored(acme, member, upstream)

    response = browser.post(f"/account/apps/accounts/{credential.pk}/disconnect/", follow=True)

    assert "Disconnected upstream github on Acme. The upstream confirmed the revocation." in response.content.decode()
    assert not PersonalCredential.objects.exists()
    revoked = [parse_qs(body.decode()) for body in upstream_as.bodies]
    assert [(form["token"], form["token_type_hint"]) for form in revoked] == [
        ([REFRESH], ["refresh_token"]),
        ([ACCESS], ["access_token"]),
    ]


@LOOPBACK_ALLOWED
def test_an_upstream_that_refuses_the_revocation_is_reported(acme, member, browser, upstream_as):
    upstream = oauth_upstream(acme, revocation=f"{upstream_as.base}/no-such-endpoint")
    credential = oauth_stored(acme, member, upstream)

    html = browser.post(f"/account/apps/accounts/{credential.pk}/disconnect/", follow=True).content.decode()

    assert "The upstream did not confirm a revocation" in html and "notice--warning" in html
    assert upstream_as.hits["/no-such-endpoint"] == 2
    assert not PersonalCredential.objects.exists()


def test_an_upstream_without_revocation_is_disconnected_here_and_the_person_told(acme, member, browser):
    credential = oauth_stored(acme, member, oauth_upstream(acme, revocation=None))

    html = browser.post(f"/account/apps/accounts/{credential.pk}/disconnect/", follow=True).content.decode()

    assert "the platform no longer holds your tokens" in html
    assert not PersonalCredential.objects.exists()


def test_replacing_a_key_opens_a_fresh_key_page_whose_key_takes_the_old_ones_place(acme, member, browser):
    credential = key_stored(acme, member, key_tool(acme))

    response = browser.post(f"/account/apps/accounts/{credential.pk}/replace/")

    assert response.status_code == 302 and re.fullmatch(r"/connect/[\w-]+/", response["Location"])
    page = browser.get(response["Location"])
    assert page.status_code == 200 and "Add your Weather API key" in page.content.decode()
    browser.post(response["Location"], {"key": "sk-new-key"})
    (replaced,) = PersonalCredential.objects.all()
    assert replaced.pk == credential.pk and services.credential_values(replaced) == {"key": "sk-new-key"}
    # The link was made for this page, not for a call's question.
    link = ConnectLink.objects.get()
    assert link.elicitation_id.startswith("replace-") and link.used_at is not None


def test_another_persons_account_is_a_404_and_stays(acme, member, browser):
    bob = UserFactory(username="bob")
    MembershipFactory(user=bob, tenant=acme)
    theirs = key_stored(acme, bob, key_tool(acme))

    for action in ("disconnect", "replace"):
        assert browser.post(f"/account/apps/accounts/{theirs.pk}/{action}/").status_code == 404
    assert browser.post("/account/apps/accounts/999999/disconnect/").status_code == 404
    assert PersonalCredential.objects.filter(pk=theirs.pk).exists()
    assert not ConnectLink.objects.exists()


def test_the_buttons_take_post_with_csrf_only(acme, member):
    credential = key_stored(acme, member, key_tool(acme))
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(member)

    assert strict.get(f"/account/apps/accounts/{credential.pk}/disconnect/").status_code == 405
    assert strict.post(f"/account/apps/accounts/{credential.pk}/disconnect/").status_code == 403
    assert strict.post(f"/account/apps/accounts/{credential.pk}/replace/").status_code == 403
    assert Client().post(f"/account/apps/accounts/{credential.pk}/disconnect/").status_code == 302  # to sign in
    assert PersonalCredential.objects.filter(pk=credential.pk).exists()
