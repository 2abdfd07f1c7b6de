"""People in the admin: owners and admins invite by e-mail and manage their tenants' invitations only; a person of
one tenant finds it chosen in every add form; the index lists their tenants; principals read as people."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from mcp_platform.activity.models import ActivityRecord
from mcp_platform.jobs.models import ToolRun
from tenants import people
from tenants.models import Invitation, Tenant
from tests.admin_objects import admin_object, person
from tests.factories import MembershipFactory, TenantFactory, UserFactory

pytestmark = pytest.mark.django_db

ADD_INVITATION = "admin:tenants_invitation_add"
INVITATIONS = "admin:tenants_invitation_changelist"


def signed_in(tenant: Tenant | None, role: str | None, username: str, **flags: Any) -> tuple[Client, Any]:
    user = person(tenant, role, username, **flags)
    client = Client()
    client.force_login(user)
    return client, user


def invite(client: Client, tenant: Tenant, email: str, role: str) -> Any:
    return client.post(reverse(ADD_INVITATION), {"tenant": tenant.pk, "email": email, "role": role})


def test_an_owner_invites_by_email_with_the_role_chosen_up_front(ours: Tenant, mailoutbox: Any) -> None:
    client, _ = signed_in(ours, "owner", "olivia")

    form = client.get(reverse(ADD_INVITATION)).content.decode()
    response = invite(client, ours, "nadia@example.com", "admin")

    assert re.search(r'<option value="owner">Owner</option>', form)
    assert response.status_code == 302
    [message] = mailoutbox
    link = re.search(r"http://testserver/account/invitation/[^/\s]+/", message.body)
    assert link is not None and message.to == ["nadia@example.com"]
    listing = client.get(reverse(INVITATIONS)).content.decode()
    assert "nadia@example.com" in listing and "Pending" in listing


def test_an_admin_is_not_offered_the_owner_role_and_cannot_post_it(ours: Tenant, mailoutbox: Any) -> None:
    client, _ = signed_in(ours, "admin", "adam")

    form = client.get(reverse(ADD_INVITATION)).content.decode()
    refused = invite(client, ours, "boss@example.com", "owner")
    allowed = invite(client, ours, "helper@example.com", "member")

    assert 'value="owner"' not in form
    assert "Select a valid choice. owner is not one of the available choices." in refused.content.decode()
    assert allowed.status_code == 302
    assert [m.to for m in mailoutbox] == [["helper@example.com"]]


def test_a_refused_invitation_keeps_what_was_typed(ours: Tenant, mailoutbox: Any) -> None:
    client, _ = signed_in(ours, "owner", "olivia")
    invite(client, ours, "nadia@example.com", "admin")

    again = invite(client, ours, "nadia@example.com", "member").content.decode()

    assert "This address already has an invitation waiting" in again
    assert 'value="nadia@example.com"' in again and '<option value="member" selected>' in again
    assert len(mailoutbox) == 1


def test_invitations_of_another_tenant_are_out_of_reach(ours: Tenant, theirs: Tenant, mailoutbox: Any) -> None:
    gus = UserFactory(username="gus", email="gus@example.com")
    MembershipFactory(tenant=theirs, user=gus, role="owner")
    theirs_invitation = people.invitation_create(
        tenant=theirs, email="secret@globex.example", role="member", by=gus, link_for=lambda token: token
    )
    client, _ = signed_in(ours, "owner", "olivia")

    listing = client.get(reverse(INVITATIONS)).content.decode()
    page = client.get(reverse("admin:tenants_invitation_change", args=[theirs_invitation.pk]))
    posted = invite(client, theirs, "x@example.com", "member")
    revoke = client.post(
        reverse(INVITATIONS), {"action": "revoke", "_selected_action": [theirs_invitation.pk], "index": "0"}
    )

    assert "secret@globex.example" not in listing
    assert page.status_code == 404
    assert "Select a valid choice" in posted.content.decode()
    assert revoke.status_code == 302
    assert Invitation.objects.get(pk=theirs_invitation.pk).revoked_at is None
    assert Invitation.objects.filter(tenant=ours).count() == 0


def test_owners_resend_and_revoke_from_the_list(ours: Tenant, mailoutbox: Any) -> None:
    client, owner = signed_in(ours, "owner", "olivia")
    invitation = people.invitation_create(
        tenant=ours, email="nadia@example.com", role="admin", by=owner, link_for=lambda token: token
    )
    Invitation.objects.filter(pk=invitation.pk).update(sent_at=invitation.sent_at.replace(year=2020))

    resent = client.post(
        reverse(INVITATIONS), {"action": "resend", "_selected_action": [invitation.pk], "index": "0"}, follow=True
    )
    revoked = client.post(
        reverse(INVITATIONS), {"action": "revoke", "_selected_action": [invitation.pk], "index": "0"}, follow=True
    )

    assert "Sent 1 invitation again." in resent.content.decode()
    assert len(mailoutbox) == 2 and mailoutbox[1].body != mailoutbox[0].body
    assert "Revoked 1 invitation." in revoked.content.decode()
    assert people.invitation_state(Invitation.objects.get()) is people.InvitationState.REVOKED
    pending = client.get(reverse(INVITATIONS), {"state": "pending"})
    assert list(pending.context["cl"].result_list) == []


def test_members_have_no_invitations_page(ours: Tenant) -> None:
    client, _ = signed_in(ours, "member", "mo")

    assert client.get(reverse(ADD_INVITATION)).status_code == 302  # to the admin's sign-in: no admin for members


def tenant_page(client: Client, tenant: Tenant) -> Any:
    return client.get(reverse("admin:tenants_tenant_change", args=[tenant.pk]))


def pending_rows(page: Any) -> list[tuple[str, str, str, bool]]:
    """(e-mail, role, invited by, has buttons) of each pending invitation the tenant page lists."""
    return [
        (row.email, row.role, row.invited_by, row.resend_url is not None) for row in page.context["pending_invitations"]
    ]


def test_the_tenant_page_lists_pending_invitations_only(ours: Tenant, theirs: Tenant, mailoutbox: Any) -> None:
    client, owner = signed_in(ours, "owner", "olivia")
    gus = UserFactory(username="gus")
    MembershipFactory(tenant=theirs, user=gus, role="owner")
    for address, tenant, by in (
        ("nadia@example.com", ours, owner),
        ("gone@example.com", ours, owner),
        ("late@example.com", ours, owner),
        ("secret@globex.example", theirs, gus),
    ):
        people.invitation_create(tenant=tenant, email=address, role="admin", by=by, link_for=lambda token: token)
    people.invitation_revoke(invitation=Invitation.objects.get(email="gone@example.com"), by=owner)
    Invitation.objects.filter(email="late@example.com").update(expires_at=timezone.now())

    page = tenant_page(client, ours)
    html = page.content.decode()

    assert pending_rows(page) == [("nadia@example.com", "Admin", "olivia", True)]
    assert "Pending invitations" in html and 'aria-label="Revoke the invitation of nadia@example.com"' in html
    assert 'form="invitation-actions"' in html and '<form id="invitation-actions" method="post">' in html
    assert "secret@globex.example" not in html and "gone@example.com" not in html


def test_an_owner_resends_and_revokes_from_the_tenant_page(ours: Tenant, mailoutbox: Any) -> None:
    client, owner = signed_in(ours, "owner", "olivia")
    invitation = people.invitation_create(
        tenant=ours, email="nadia@example.com", role="member", by=owner, link_for=lambda token: token
    )
    resend = reverse("admin:tenants_invitation_resend", args=[invitation.pk])
    revoke = reverse("admin:tenants_invitation_revoke", args=[invitation.pk])

    too_soon = client.post(resend, follow=True)
    Invitation.objects.filter(pk=invitation.pk).update(sent_at=invitation.sent_at.replace(year=2020))
    resent = client.post(resend, follow=True)
    revoked = client.post(revoke, follow=True)

    assert said(too_soon) == ["nadia@example.com: The invitation of nadia@example.com was sent less than a minute ago."]
    assert resent.redirect_chain == [
        (reverse("admin:tenants_tenant_change", args=[ours.pk]) + "#pending-invitations", 302)
    ]
    assert said(resent) == ["Sent the invitation of nadia@example.com again."]
    assert len(mailoutbox) == 2 and mailoutbox[1].body != mailoutbox[0].body
    assert said(revoked) == ["Revoked the invitation of nadia@example.com."]
    assert people.invitation_state(Invitation.objects.get()) is people.InvitationState.REVOKED
    assert pending_rows(revoked) == []
    assert client.get(resend).status_code == 405  # a link never changes anything


def test_an_admin_sees_an_owners_invitation_but_cannot_touch_it(ours: Tenant, mailoutbox: Any) -> None:
    owner = UserFactory(username="olivia")
    MembershipFactory(tenant=ours, user=owner, role="owner")
    invitation = people.invitation_create(
        tenant=ours, email="boss@example.com", role="owner", by=owner, link_for=lambda token: token
    )
    client, _ = signed_in(ours, "admin", "adam")

    page = tenant_page(client, ours)
    refused = client.post(reverse("admin:tenants_invitation_revoke", args=[invitation.pk]), follow=True)

    assert pending_rows(page) == [("boss@example.com", "Owner", "olivia", False)]
    assert "Only an owner resends or revokes it." in page.content.decode()
    assert said(refused) == ["boss@example.com: You may not revoke this invitation."]
    assert people.invitation_state(Invitation.objects.get()) is people.InvitationState.PENDING


def test_another_tenants_invitation_cannot_be_resent_or_revoked(ours: Tenant, theirs: Tenant, mailoutbox: Any) -> None:
    gus = UserFactory(username="gus")
    MembershipFactory(tenant=theirs, user=gus, role="owner")
    theirs_invitation = people.invitation_create(
        tenant=theirs, email="secret@globex.example", role="member", by=gus, link_for=lambda token: token
    )
    Invitation.objects.update(sent_at=theirs_invitation.sent_at.replace(year=2020))
    client, _ = signed_in(ours, "owner", "olivia")

    answers = [
        client.post(reverse(f"admin:tenants_invitation_{action}", args=[theirs_invitation.pk]))
        for action in ("resend", "revoke")
    ]

    assert [a.status_code for a in answers] == [404, 404]
    assert tenant_page(client, theirs).status_code == 404
    assert people.invitation_state(Invitation.objects.get()) is people.InvitationState.PENDING
    assert len(mailoutbox) == 1


def said(response: Any) -> list[str]:
    """The messages the page shows (the admin capitalises their first letter)."""
    return [str(message) for message in response.context["messages"]]


ADD_FORMS = [
    "admin:tenants_tool_add",
    "admin:tenants_resource_add",
    "admin:tenants_resourcetemplate_add",
    "admin:tenants_prompt_add",
    "admin:tenants_secret_add",
    "admin:tenants_upstream_add",
    "admin:tenants_openapisource_add",
    "admin:tenants_invitation_add",
    "admin:tenants_membership_add",
    "admin:quotas_ratelimit_add",
]


def selected_tenant(page: str, tenant: Tenant) -> bool:
    return bool(re.search(rf'<option value="{tenant.pk}" selected>', page))


@pytest.mark.parametrize("url_name", ADD_FORMS)
def test_an_owner_of_one_tenant_finds_it_chosen_in_every_add_form(ours: Tenant, url_name: str) -> None:
    client, _ = signed_in(ours, "owner", "olivia")

    page = client.get(reverse(url_name), follow=True)  # an OpenAPI source is added through its import page

    assert page.status_code == 200
    assert selected_tenant(page.content.decode(), ours)


def test_with_two_tenants_nothing_is_chosen_for_them(ours: Tenant, theirs: Tenant) -> None:
    client, user = signed_in(ours, "owner", "olivia")
    MembershipFactory(tenant=theirs, user=user, role="admin")

    page = client.get(reverse("admin:tenants_tool_add")).content.decode()

    assert not selected_tenant(page, ours) and not selected_tenant(page, theirs)
    assert '<option value="" selected>' in page


def test_a_tenant_named_in_the_address_or_typed_stays_chosen(ours: Tenant) -> None:
    client, _ = signed_in(ours, "owner", "olivia")

    refused = client.post(reverse("admin:tenants_tool_add"), {"tenant": "", "name": "x"}).content.decode()

    assert not selected_tenant(refused, ours)  # what was sent is what the form shows again


def test_the_index_lists_the_persons_tenants_with_links(ours: Tenant, theirs: Tenant) -> None:
    client, user = signed_in(ours, "owner", "olivia")
    TenantFactory(slug="initech", name="Initech")
    MembershipFactory(tenant=theirs, user=user, role="member")  # a member's tenant opens no admin

    page = client.get(reverse("admin:index")).content.decode()

    assert "<caption>Your tenants</caption>" in page
    assert f'<a href="{reverse("admin:tenants_tenant_change", args=[ours.pk])}">Acme</a>' in page
    assert f"{reverse('admin:tenants_tool_changelist')}?tenant__id__exact={ours.pk}" in page
    assert f"{reverse(ADD_INVITATION)}?tenant={ours.pk}" in page
    assert "Globex" not in page and "Initech" not in page


def test_staff_see_their_own_tenants_and_a_link_to_all(ours: Tenant, theirs: Tenant) -> None:
    client, _ = signed_in(None, None, "root", is_superuser=True, is_staff=True)

    page = client.get(reverse("admin:index")).content.decode()

    assert "You hold no membership yourself." in page and "All tenants (2)" in page


def test_principals_read_as_people_in_the_activity_log_and_tool_runs(ours: Tenant) -> None:
    client, admin_user = signed_in(ours, "admin", "ada")
    nadia = UserFactory(username="nadia", email="nadia@example.com")
    for n in range(5):
        ActivityRecord.objects.create(
            tenant=ours, at=timezone.now(), method="tools/call", target=f"t{n}", principal=str(nadia.pk)
        )
    ActivityRecord.objects.create(tenant=ours, at=timezone.now(), method="tools/call", target="anon", principal="")
    run = admin_object(ToolRun, ours)
    ToolRun.objects.filter(pk=run.pk).update(principal=f"user:{admin_user.pk} client:claude")

    log = client.get(reverse("admin:activity_activityrecord_changelist"))
    runs = client.get(reverse("admin:jobs_toolrun_changelist"))
    record = ActivityRecord.objects.filter(target="t0").get()
    detail = client.get(reverse("admin:activity_activityrecord_change", args=[record.pk])).content.decode()

    assert log.content.decode().count("nadia (nadia@example.com)") >= 6  # five rows and the filter's choice
    assert "ada (ada@example.com)" in runs.content.decode()
    assert f"user:{admin_user.pk}" not in runs.content.decode().replace(f"principal=user%3A{admin_user.pk}", "")
    assert "nadia (nadia@example.com)" in detail
    # One query names every row of a page: more rows of more people cost no more queries.
    before = queries_of(client, reverse("admin:activity_activityrecord_changelist"))
    for n in range(25):
        person = UserFactory(username=f"p{n}")
        ActivityRecord.objects.create(
            tenant=ours, at=timezone.now(), method="tools/call", target=f"u{n}", principal=str(person.pk)
        )
    assert queries_of(client, reverse("admin:activity_activityrecord_changelist")) == before


def queries_of(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)
