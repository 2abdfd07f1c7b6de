"""Members' connections in the tenant admin: who is connected to what, with kind, status and dates, filtered by target
and status; an admin disconnects one (revoked at the upstream where it can), adds and edits none, sees no value; and
another tenant's admin neither sees nor disconnects them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import pytest
from django.conf import settings
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from tenants.models import Membership, PersonalCredential, Tenant
from tests.factories import MembershipFactory, UserFactory
from tests.loopback_http import LoopbackServer, loopback_server
from tests.tenants.connections.stored import ACCESS, KEY, REFRESH, key_stored, key_tool, oauth_stored, oauth_upstream

pytestmark = pytest.mark.django_db

LOOPBACK_ALLOWED = override_settings(
    MCP_PLATFORM={**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]},
)
LIST = reverse("admin:tenants_personalcredential_changelist")


def change_url(credential: PersonalCredential) -> str:
    return reverse("admin:tenants_personalcredential_change", args=[credential.pk])


def disconnect_url(credential: PersonalCredential) -> str:
    return reverse("admin:tenants_personalcredential_disconnect", args=[credential.pk])


def signed_in(tenant: Tenant, username: str, role: str = Membership.Role.ADMIN) -> Client:
    client = Client()
    client.force_login(MembershipFactory(tenant=tenant, user=UserFactory(username=username), role=role).user)
    return client


def member(tenant: Tenant, username: str) -> Any:
    return MembershipFactory(
        tenant=tenant, user=UserFactory(username=username, email=f"{username}@example.com"), role="member"
    ).user


def cells(html: str) -> list[list[str]]:
    """The changelist's rows, each a list of its cells' texts."""
    body = html.split('<table id="result_list">', 1)[1].split("</table>", 1)[0].split("<tbody>", 1)[1]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    return [
        [
            re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        ]
        for row in rows
    ]


@pytest.fixture
def upstream_as() -> Iterator[LoopbackServer]:
    with loopback_server() as server:
        yield server


def test_the_list_names_each_member_what_they_connected_and_never_a_value(tenant: Tenant) -> None:
    admin = signed_in(tenant, "olivia")
    alice, bob = member(tenant, "alice"), member(tenant, "bob")
    weather, github = key_tool(tenant, "weather"), oauth_upstream(tenant, "github")
    key_stored(tenant, alice, weather)
    connected = oauth_stored(tenant, bob, github)
    PersonalCredential.objects.filter(pk=connected.pk).update(
        status=PersonalCredential.Status.NEEDS_PERSON, last_used_at=timezone.now()
    )

    html = admin.get(LIST).content.decode()
    rows = sorted(row[1:5] for row in cells(html))

    assert rows == [
        ["alice (alice@example.com)", "tool weather", "Personal API key", "Connected"],
        ["bob (bob@example.com)", "upstream github", "OAuth connection", "Needs reconnecting"],
    ]
    assert KEY not in html and ACCESS not in html and REFRESH not in html
    page = admin.get(change_url(connected)).content.decode()
    assert "upstream github" in page and "bob (bob@example.com)" in page
    assert ACCESS not in page and REFRESH not in page and connected.sealed not in page
    assert 'name="_save"' not in page and ">Disconnect</button>" in page


def test_the_list_filters_by_target_and_by_status(tenant: Tenant) -> None:
    admin = signed_in(tenant, "olivia")
    alice, bob = member(tenant, "alice"), member(tenant, "bob")
    weather, github = key_tool(tenant, "weather"), oauth_upstream(tenant, "github")
    key_stored(tenant, alice, weather)
    key_stored(tenant, bob, weather)
    stale = oauth_stored(tenant, alice, github)
    PersonalCredential.objects.filter(pk=stale.pk).update(status=PersonalCredential.Status.NEEDS_PERSON)

    page = admin.get(LIST)
    assert page.status_code == 200
    assert "tool weather" in page.content.decode() and "upstream github" in page.content.decode()
    by_target = admin.get(LIST, {"target": f"tool:{weather.pk}"}).context["cl"].result_list
    assert sorted(c.user.username for c in by_target) == ["alice", "bob"]
    by_status = admin.get(LIST, {"status__exact": "needs_person"}).context["cl"].result_list
    assert [c.pk for c in by_status] == [stale.pk]


def test_nothing_is_added_or_edited_here(tenant: Tenant) -> None:
    admin = signed_in(tenant, "olivia")
    credential = key_stored(tenant, member(tenant, "alice"), key_tool(tenant, "weather"))

    assert admin.get(reverse("admin:tenants_personalcredential_add")).status_code == 403
    admin.post(change_url(credential), {"status": "needs_person", "target": "tool:1"})
    assert PersonalCredential.objects.get(pk=credential.pk).status == PersonalCredential.Status.ACTIVE
    assert admin.get(reverse("admin:tenants_personalcredential_delete", args=[credential.pk])).status_code == 403


def test_a_member_has_no_page_of_connections(tenant: Tenant) -> None:
    credential = key_stored(tenant, member(tenant, "alice"), key_tool(tenant, "weather"))
    plain = signed_in(tenant, "mia", role=Membership.Role.MEMBER)

    assert plain.post(disconnect_url(credential)).status_code in (302, 403)
    assert PersonalCredential.objects.filter(pk=credential.pk).exists()


@LOOPBACK_ALLOWED
def test_the_disconnect_button_removes_it_and_revokes_it_at_the_upstream(
    tenant: Tenant, upstream_as: LoopbackServer
) -> None:
    admin = signed_in(tenant, "olivia")
    credential = oauth_stored(
        tenant, member(tenant, "bob"), oauth_upstream(tenant, "github", revocation=f"{upstream_as.base}/hello")
    )

    assert admin.get(disconnect_url(credential)).status_code == 405
    response = admin.post(disconnect_url(credential), follow=True)

    assert response.redirect_chain[-1][0] == LIST
    assert "Disconnected bob (bob@example.com) from upstream github. The upstream confirmed the revocation." in (
        response.content.decode()
    )
    assert not PersonalCredential.objects.exists()
    assert [parse_qs(body.decode())["token"] for body in upstream_as.bodies] == [[REFRESH], [ACCESS]]


def test_the_action_disconnects_the_selected_and_says_what_the_upstreams_answered(tenant: Tenant) -> None:
    admin = signed_in(tenant, "olivia")
    alice, bob = member(tenant, "alice"), member(tenant, "bob")
    removed = key_stored(tenant, alice, key_tool(tenant, "weather"))
    disconnected = oauth_stored(tenant, bob, oauth_upstream(tenant, "github"))
    kept = key_stored(tenant, bob, key_tool(tenant, "maps"))

    response = admin.post(
        LIST,
        {"action": "disconnect", "_selected_action": [removed.pk, disconnected.pk], "index": "0"},
        follow=True,
    )

    html = response.content.decode()
    assert "Removed the key of alice (alice@example.com) for tool weather." in html
    assert "Disconnected bob (bob@example.com) from upstream github: the platform no longer holds" in html
    assert list(PersonalCredential.objects.values_list("pk", flat=True)) == [kept.pk]


def test_another_tenants_admin_neither_sees_nor_disconnects_them(tenant: Tenant, other_tenant: Tenant) -> None:
    theirs = key_stored(tenant, member(tenant, "alice"), key_tool(tenant, "weather"))
    stranger = signed_in(other_tenant, "gary")
    key_stored(other_tenant, member(other_tenant, "gina"), key_tool(other_tenant, "gtool"))

    listed = stranger.get(LIST)
    assert [c.user.username for c in listed.context["cl"].result_list] == ["gina"]
    assert "alice" not in listed.content.decode() and "tool weather" not in listed.content.decode()
    assert stranger.get(change_url(theirs)).status_code == 404
    assert stranger.post(disconnect_url(theirs)).status_code == 404
    stranger.post(LIST, {"action": "disconnect", "_selected_action": [theirs.pk], "index": "0"})
    assert PersonalCredential.objects.filter(pk=theirs.pk).exists()
