"""Who gets the admin and what each role may do there: owners and admins through their membership alone, members
and staff flags nothing, superusers everything; owners manage members by username or e-mail."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from mcp_platform.oauth.machine_clients import machine_client_create
from mcp_platform.oauth.models import TenantApplication
from tenants.admin.policy import tenant_ids_administered_by, tenant_ids_owned_by
from tenants.models import Membership, Tenant, Tool
from tests.admin_objects import person
from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, ToolFactory

pytestmark = pytest.mark.django_db


def signed_in(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client


def test_the_policy_names_administered_and_owned_tenants(ours: Tenant, theirs: Tenant) -> None:
    owner = person(ours, "owner", "olivia")
    MembershipFactory(tenant=theirs, user=owner, role="admin")
    member = person(ours, "member", "mo")
    root = person(None, None, "root", is_superuser=True, is_staff=True)

    assert tenant_ids_administered_by(owner) == {ours.pk, theirs.pk}
    assert tenant_ids_owned_by(owner) == {ours.pk}
    assert tenant_ids_administered_by(member) == frozenset()
    assert tenant_ids_administered_by(root) == {ours.pk, theirs.pk}


def test_an_owner_made_only_through_a_membership_signs_in(client: Client, ours: Tenant) -> None:
    person(ours, "owner", "olivia")

    signed = client.post(
        reverse("admin:login"), {"username": "olivia", "password": "correct horse battery staple", "next": "/admin/"}
    )
    index = client.get(reverse("admin:index"))

    assert signed.status_code == 302 and signed["Location"] == "/admin/"
    assert index.status_code == 200
    assert "Tools" in index.content.decode()
    assert "Users" not in index.content.decode()  # the platform's people are staff's


@pytest.mark.parametrize(
    ("role", "flags"),
    [("member", {}), (None, {}), (None, {"is_staff": True}), ("member", {"is_staff": True})],
    ids=["member", "no-membership", "staff-flag", "staff-member"],
)
def test_members_and_people_without_a_tenant_get_no_admin(
    client: Client, ours: Tenant, role: str | None, flags: dict[str, Any]
) -> None:
    user = person(ours, role, "mallory", **flags)
    user.user_permissions.set(Permission.objects.all())  # model permissions no longer open anything

    refused = client.post(reverse("admin:login"), {"username": "mallory", "password": "correct horse battery staple"})
    client.force_login(user)
    pages = [client.get(reverse(name)) for name in ("admin:index", "admin:tenants_tool_changelist")]

    assert refused.status_code == 200 and "administers a tenant" in refused.content.decode()
    assert all(page.status_code == 302 and page["Location"].startswith("/admin/login/") for page in pages)


def test_superusers_see_every_tenants_rows(client: Client, ours: Tenant, theirs: Tenant) -> None:
    ToolFactory(tenant=ours, name="ours_tool")
    ToolFactory(tenant=theirs, name="their_tool")
    unbound = OAuthClientFactory(name="Self-registered")
    signed_in(client, person(None, None, "root", is_superuser=True, is_staff=True))

    tools = client.get(reverse("admin:tenants_tool_changelist")).context["cl"].result_list
    clients = client.get(reverse("admin:oauth_tenantapplication_changelist")).context["cl"].result_list

    assert {t.name for t in tools} == {"ours_tool", "their_tool"}
    assert unbound.pk in {c.pk for c in clients}


def test_self_registered_clients_are_staffs_alone(client: Client, ours: Tenant) -> None:
    unbound = OAuthClientFactory(name="Self-registered")
    bound = OAuthClientFactory(name="Acme desktop", tenant=ours)
    signed_in(client, person(ours, "owner", "olivia"))

    listed = client.get(reverse("admin:oauth_tenantapplication_changelist")).context["cl"].result_list

    assert {c.pk for c in listed} == {bound.pk}
    assert client.get(reverse("admin:oauth_tenantapplication_change", args=[unbound.pk])).status_code == 404


def test_a_tenant_admin_registers_clients_only_bound_to_their_tenant(
    client: Client, ours: Tenant, theirs: Tenant
) -> None:
    signed_in(client, person(ours, "admin", "ada"))
    form = {
        "name": "Acme CLI",
        "client_id": "acme-cli",
        "client_type": "public",
        "authorization_grant_type": "authorization-code",
        "redirect_uris": "http://127.0.0.1/callback",
        "algorithm": "",
    }

    unbound = client.post(reverse("admin:oauth_tenantapplication_add"), form)
    foreign = client.post(reverse("admin:oauth_tenantapplication_add"), {**form, "tenant": theirs.pk})
    bound = client.post(reverse("admin:oauth_tenantapplication_add"), {**form, "tenant": ours.pk})

    assert "tenant" in unbound.context["adminform"].form.errors
    assert "tenant" in foreign.context["adminform"].form.errors
    assert bound.status_code == 302, bound.context["adminform"].form.errors
    assert list(TenantApplication.objects.values_list("name", "tenant_id")) == [("Acme CLI", ours.pk)]


def test_a_tool_cannot_be_moved_to_another_tenant(client: Client, ours: Tenant, theirs: Tenant) -> None:
    tool = ToolFactory(tenant=ours, name="stays")
    signed_in(client, person(ours, "admin", "ada"))
    form = {
        "tenant": theirs.pk,
        "name": "stays",
        "description": "moved?",
        "input_schema": '{"type": "object", "properties": {}}',
        "backend": "static",
        "config": '{"content": [{"type": "text", "text": "hi"}]}',
        "task_support": "forbidden",
        "enabled": "on",
    }

    response = client.post(reverse("admin:tenants_tool_change", args=[tool.pk]), form)

    assert response.status_code == 302
    assert Tool.objects.get(pk=tool.pk).tenant_id == ours.pk


def test_filters_list_only_administered_tenants(client: Client, ours: Tenant, theirs: Tenant) -> None:
    other = TenantFactory(slug="initech", name="Initech")
    user = person(ours, "admin", "ada")
    MembershipFactory(tenant=other, user=user, role="owner")
    signed_in(client, user)

    page = client.get(reverse("admin:tenants_tool_changelist"))
    tenant_filter = next(spec for spec in page.context["cl"].filter_specs if spec.field.name == "tenant")

    assert sorted(name for _, name in tenant_filter.lookup_choices) == ["acme", "initech"]


def test_rotating_a_machine_client_secret_works_only_within_administered_tenants(
    client: Client, ours: Tenant, theirs: Tenant
) -> None:
    mine, _ = machine_client_create(tenant=ours, name="acme robot", scopes=["mcp:tools"])
    foreign, _ = machine_client_create(tenant=theirs, name="globex robot", scopes=["mcp:tools"])
    hashes = {c.pk: c.client_secret for c in TenantApplication.objects.all()}
    signed_in(client, person(ours, "admin", "ada"))

    response = client.post(
        reverse("admin:oauth_machineclient_changelist"),
        {"action": "rotate_secret", "_selected_action": [mine.pk, foreign.pk], "index": "0"},
        follow=True,
    )

    shown = [str(m) for m in response.context["messages"]]
    assert len(shown) == 1 and "acme robot" in shown[0]
    assert TenantApplication.objects.get(pk=mine.pk).client_secret != hashes[mine.pk]
    assert TenantApplication.objects.get(pk=foreign.pk).client_secret == hashes[foreign.pk]


def test_tenant_admins_cannot_suspend_or_widen_their_tenant(client: Client, ours: Tenant) -> None:
    signed_in(client, person(ours, "owner", "olivia"))

    form = client.get(reverse("admin:tenants_tenant_change", args=[ours.pk])).context["adminform"].form

    assert "status" not in form.fields and "outbound_allowed_networks" not in form.fields
    assert client.get(reverse("admin:tenants_tenant_add")).status_code == 403
    assert client.get(reverse("admin:tenants_tenant_delete", args=[ours.pk])).status_code == 403


def test_an_owner_adds_members_by_username_or_email(client: Client, ours: Tenant) -> None:
    signed_in(client, person(ours, "owner", "olivia"))
    person(None, None, "bob")
    carol = person(None, None, "carol")
    add = reverse("admin:tenants_membership_add")

    by_name = client.post(add, {"tenant": ours.pk, "person": "bob", "role": "admin"})
    by_email = client.post(add, {"tenant": ours.pk, "person": carol.email.upper(), "role": "member"})
    unknown = client.post(add, {"tenant": ours.pk, "person": "nobody@example.com", "role": "member"})
    again = client.post(add, {"tenant": ours.pk, "person": "bob", "role": "owner"})

    assert by_name.status_code == 302 and by_email.status_code == 302
    assert unknown.context["adminform"].form.errors["person"] == [
        "No single account has this username or e-mail address. Someone without an account: invite them by e-mail "
        "(Invitations)."
    ]
    assert "person" in again.context["adminform"].form.errors
    roles = dict(Membership.objects.filter(tenant=ours).values_list("user__username", "role"))
    assert roles == {"olivia": "owner", "bob": "admin", "carol": "member"}


def test_the_membership_form_never_lists_the_platforms_people(client: Client, ours: Tenant) -> None:
    person(None, None, "someone-else")
    signed_in(client, person(ours, "owner", "olivia"))

    page = client.get(reverse("admin:tenants_membership_add")).content.decode()
    tenant_page = client.get(reverse("admin:tenants_tenant_change", args=[ours.pk])).content.decode()

    assert "someone-else" not in page and "someone-else" not in tenant_page
    assert client.get(reverse("admin:auth_user_changelist")).status_code == 403


def test_admins_see_members_but_only_owners_manage_them(client: Client, ours: Tenant, theirs: Tenant) -> None:
    signed_in(client, person(ours, "admin", "ada"))
    person(None, None, "bob")

    listed = client.get(reverse("admin:tenants_membership_changelist"))
    added = client.post(reverse("admin:tenants_membership_add"), {"tenant": ours.pk, "person": "bob", "role": "owner"})

    assert listed.status_code == 200 and [m.user.username for m in listed.context["cl"].result_list] == ["ada"]
    assert added.status_code == 403
    assert not Membership.objects.filter(user__username="bob").exists()


def test_an_owner_cannot_add_members_where_they_are_only_admin(client: Client, ours: Tenant, theirs: Tenant) -> None:
    olivia = person(ours, "owner", "olivia")
    MembershipFactory(tenant=theirs, user=olivia, role="admin")
    person(None, None, "bob")
    signed_in(client, olivia)

    refused = client.post(
        reverse("admin:tenants_membership_add"), {"tenant": theirs.pk, "person": "bob", "role": "owner"}
    )

    assert "tenant" in refused.context["adminform"].form.errors
    assert not Membership.objects.filter(user__username="bob").exists()


def test_a_tenant_keeps_an_owner(client: Client, ours: Tenant) -> None:
    olivia = person(ours, "owner", "olivia")
    mine = Membership.objects.get(user=olivia)
    signed_in(client, olivia)

    demoted = client.post(reverse("admin:tenants_membership_change", args=[mine.pk]), {"role": "member"})
    removed = client.post(reverse("admin:tenants_membership_delete", args=[mine.pk]), {"post": "yes"})

    assert "role" in demoted.context["adminform"].form.errors
    assert removed.status_code == 403
    assert Membership.objects.get(pk=mine.pk).role == "owner"


def test_only_owners_add_members_on_the_tenant_page(client: Client, ours: Tenant) -> None:
    person(None, None, "bob")
    form = {
        "slug": "acme",
        "name": "Acme",
        "allowed_origins": "[]",
        "instructions": "",
        "memberships-TOTAL_FORMS": "1",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
        "memberships-0-person": "bob",
        "memberships-0-role": "owner",
    }
    change = reverse("admin:tenants_tenant_change", args=[ours.pk])

    signed_in(client, person(ours, "admin", "ada"))
    as_admin = client.post(change, form)
    signed_in(client, person(ours, "owner", "olivia"))
    as_owner = client.post(change, form)

    assert as_admin.status_code == 302 and as_owner.status_code == 302
    assert dict(Membership.objects.filter(tenant=ours).values_list("user__username", "role")) == {
        "ada": "admin",
        "olivia": "owner",
        "bob": "owner",
    }
