"""Events of people's own connections go into the tenant's activity log: connected, refreshed or refused, used,
disconnected (by whom), a key stored or removed; never a token or key in any column. The log's pages show them with
a filter by what the connection is for."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.forms.models import model_to_dict
from django.test import Client
from django.urls import reverse

from mcp_platform.activity.models import ActivityRecord
from tenants.connections import services
from tenants.connections.oauth_client import RefreshRefused, TokenSet
from tenants.models import Membership, PersonalCredential, Tenant, Upstream
from tests.factories import MembershipFactory, TenantFactory, ToolFactory, UserFactory
from tests.tenants.connections.stored import ACCESS, REFRESH, oauth_stored

pytestmark = pytest.mark.django_db

KEY = "sk-personal-9f8e7d"
NEW_ACCESS = "at-second-6a7b8c"
CHANGELIST = reverse("admin:activity_activityrecord_changelist")


@pytest.fixture
def tenant() -> Tenant:
    return TenantFactory(slug="acme", name="Acme")


def logged() -> list[ActivityRecord]:
    return list(ActivityRecord.objects.filter(kind=ActivityRecord.Kind.CONNECTION).order_by("id"))


def no_value_in(rows: list[ActivityRecord], *values: str) -> None:
    for row in rows:
        text = json.dumps(model_to_dict(row), default=str)
        assert not [value for value in values if value in text], row.method


def person(tenant: Tenant, username: str, role: str = Membership.Role.MEMBER) -> Any:
    user = UserFactory(username=username, email=f"{username}@example.com")
    MembershipFactory(tenant=tenant, user=user, role=role)
    return user


def github(tenant: Tenant) -> Upstream:
    return Upstream.objects.create(
        tenant=tenant, name="github", url="https://mcp.github.example/mcp", auth={"type": "user_oauth"}, enabled=False
    )


def access(tenant: Tenant, user: Any, target: str, refresher: Any = None) -> str | None:
    async def refused(credential: PersonalCredential, refresh_token: str) -> TokenSet:
        raise AssertionError("no refresh expected")

    return async_to_sync(services.aaccess)(
        tenant_id=tenant.pk, user_id=user.pk, target=target, refresher=refresher or refused
    )


def test_a_key_stored_used_and_removed_is_logged_without_the_key(tenant: Tenant) -> None:
    alice = person(tenant, "alice")
    tool = ToolFactory(tenant=tenant, name="weather")
    target = f"tool:{tool.pk}"
    credential = services.credential_store_key(tenant_id=tenant.pk, user_id=alice.pk, target=target, key=KEY)
    assert access(tenant, alice, target) == KEY
    assert access(tenant, alice, target) == KEY  # a second use within the resolution is not logged again
    services.credential_remove(credential=credential)

    rows = logged()
    assert [(r.method, r.target, r.principal, r.outcome, r.details) for r in rows] == [
        ("connection/key_stored", target, str(alice.pk), "ok", None),
        ("connection/used", target, str(alice.pk), "ok", None),
        ("connection/key_removed", target, str(alice.pk), "ok", None),
    ]
    assert {r.tenant_id for r in rows} == {tenant.pk}
    no_value_in(rows, KEY)


def test_a_connection_refreshed_refused_and_disconnected_by_an_admin_is_logged_without_tokens(tenant: Tenant) -> None:
    alice, olivia = person(tenant, "alice"), person(tenant, "olivia", Membership.Role.ADMIN)
    upstream = github(tenant)
    target = f"upstream:{upstream.pk}"

    async def refreshed(credential: PersonalCredential, refresh_token: str) -> TokenSet:
        assert refresh_token == REFRESH
        return TokenSet(NEW_ACCESS, None, 0, "repo")

    async def revoked(credential: PersonalCredential, refresh_token: str) -> TokenSet:
        raise RefreshRefused("invalid_grant: the refresh token was revoked")

    oauth_stored(tenant, alice, upstream, expires_in=0)
    assert access(tenant, alice, target, refreshed) == NEW_ACCESS
    assert access(tenant, alice, target, revoked) is None
    services.credential_remove(credential=PersonalCredential.objects.get(), by_user_id=olivia.pk)

    rows = logged()
    assert [(r.method, r.outcome, r.details) for r in rows] == [
        ("connection/connected", "ok", None),
        ("connection/refreshed", "ok", None),
        ("connection/refresh_failed", "error", {"error": "invalid_grant: the refresh token was revoked"}),
        ("connection/revoked", "ok", {"by": olivia.pk}),
    ]
    assert {(r.principal, r.target) for r in rows} == {(str(alice.pk), target)}
    no_value_in(rows, ACCESS, REFRESH, NEW_ACCESS)


def test_a_person_disconnecting_their_own_connection_names_no_one_else(tenant: Tenant) -> None:
    alice = person(tenant, "alice")
    credential = oauth_stored(tenant, alice, github(tenant))

    services.credential_remove(credential=credential, by_user_id=alice.pk)

    assert [(r.method, r.details) for r in logged()][-1] == ("connection/revoked", None)


def test_the_log_shows_connection_events_and_filters_them_by_what_they_are_for(tenant: Tenant) -> None:
    alice, olivia = person(tenant, "alice"), person(tenant, "olivia", Membership.Role.ADMIN)
    upstream = github(tenant)
    tool = ToolFactory(tenant=tenant, name="weather")
    services.credential_store_key(tenant_id=tenant.pk, user_id=alice.pk, target=f"tool:{tool.pk}", key=KEY)
    services.credential_remove(credential=oauth_stored(tenant, alice, upstream), by_user_id=olivia.pk)
    admin = Client()
    admin.force_login(olivia)

    listed = admin.get(CHANGELIST)
    html = listed.content.decode()
    assert "Personal connection" in html and "personal connections to" in html
    assert f"upstream github (upstream:{upstream.pk})" in html and f"tool weather (tool:{tool.pk})" in html
    assert "Disconnected" in html and "Key stored" in html and "Connected" in html

    filtered = admin.get(CHANGELIST, {"connection": f"upstream:{upstream.pk}"}).context["cl"].result_list
    assert [r.method for r in filtered] == ["connection/revoked", "connection/connected"]
    by_kind = admin.get(CHANGELIST, {"kind__exact": "connection"}).context["cl"].result_list
    assert len(by_kind) == 3

    (disconnected,) = [r for r in filtered if r.method == "connection/revoked"]
    page = admin.get(reverse("admin:activity_activityrecord_change", args=[disconnected.pk])).content.decode()
    assert "olivia (olivia@example.com)" in page and "alice (alice@example.com)" in page
    assert "upstream github" in page and "Disconnected" in page
    assert ACCESS not in html + page and REFRESH not in html + page and KEY not in html + page
