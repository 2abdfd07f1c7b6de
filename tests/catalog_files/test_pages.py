"""The configuration pages on the tenant admin, as its admins use them: export downloads the file; an upload shows
the plan (or the file's problems by line, nothing changed); Apply carries out the plan shown, and refuses (showing
the new plan) when the tenant changed meanwhile; Apply needs the CSRF token; members who administer nothing and
other tenants' admins are turned away."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from mcp_platform.catalog_files.exporting import tenant_export
from tenants.models import Membership, Tenant, Tool
from tests.catalog_files.conftest import catalog_make, database_snapshot
from tests.factories import MembershipFactory, TenantFactory, ToolFactory, UserFactory

pytestmark = pytest.mark.django_db

FILE = "version: 1\ntenant: acme\ntools:\n  - name: search\n    config: {content: [{type: text, text: found}]}\n"


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def signed_in(tenant: Tenant, role: str = Membership.Role.ADMIN, **client_options: Any) -> Client:
    person = UserFactory()
    MembershipFactory(user=person, tenant=tenant, role=role)
    client = Client(**client_options)
    client.force_login(person)
    return client


def url(name: str, tenant: Tenant) -> str:
    return reverse(f"admin:tenants_tenant_configuration{name}", args=[tenant.pk])


def upload(client: Client, tenant: Tenant, text: str | bytes, name: str = "acme.yaml") -> Any:
    content = text.encode() if isinstance(text, str) else text
    return client.post(url("", tenant), {"file": SimpleUploadedFile(name, content, "application/yaml")})


def test_the_tenant_page_links_the_configuration_page(tenant: Tenant) -> None:
    page = signed_in(tenant).get(reverse("admin:tenants_tenant_change", args=[tenant.pk]))

    assert f'href="{url("", tenant)}"' in page.content.decode()


def test_export_downloads_the_tenants_file(tenant: Tenant) -> None:
    catalog_make(tenant)

    response = signed_in(tenant).get(url("_export", tenant))

    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="acme.tenant.yaml"'
    assert response["Content-Type"] == "application/yaml; charset=utf-8"
    assert response.content.decode() == tenant_export(tenant, base_url="http://testserver")


def test_an_upload_shows_the_plan_and_changes_nothing_until_applied(tenant: Tenant) -> None:
    client = signed_in(tenant)

    shown = upload(client, tenant, FILE)

    assert shown.status_code == 200
    assert [change.title for change in shown.context["plan"].changes] == ["+ tool search"]
    assert not Tool.objects.filter(tenant=tenant).exists()

    applied = client.post(
        url("_apply", tenant), {"content": FILE, "plan": shown.context["digest"], "file_name": "acme.yaml"}
    )

    assert applied.status_code == 302 and applied["Location"] == reverse(
        "admin:tenants_tenant_change", args=[tenant.pk]
    )
    assert Tool.objects.get(tenant=tenant).name == "search"
    followed = client.get(applied["Location"])
    assert "Configuration applied: 1 to add, 0 to change, 0 to take over, 0 to remove." in followed.content.decode()


def test_a_bad_upload_shows_its_problems_by_line_and_changes_nothing(tenant: Tenant) -> None:
    client = signed_in(tenant)
    snapshot = database_snapshot()

    shown = upload(client, tenant, FILE + "  - name: search\n", name="broken.yaml")

    assert [str(problem) for problem in shown.context["problems"]] == [
        "line 6 (tools[1]): the tool 'search' is listed twice (first on line 4)"
    ]
    assert "broken.yaml cannot be applied" in shown.content.decode()
    assert database_snapshot() == snapshot


def test_an_upload_over_the_limit_is_refused_unread(tenant: Tenant) -> None:
    shown = upload(signed_in(tenant), tenant, b"#" * (3 * 1024 * 1024))

    assert [str(problem) for problem in shown.context["problems"]] == [
        "the file: the file is 3,145,728 bytes; the limit is 2,097,152"
    ]


def test_apply_refuses_when_the_tenant_changed_since_the_plan_was_shown(tenant: Tenant) -> None:
    client = signed_in(tenant)
    shown = upload(client, tenant, FILE)
    ToolFactory(tenant=tenant, name="search")  # made by someone else meanwhile
    snapshot = database_snapshot()

    refused = client.post(url("_apply", tenant), {"content": FILE, "plan": shown.context["digest"]})

    assert refused.status_code == 200
    assert "The tenant changed since the plan was shown: nothing was applied." in refused.content.decode()
    assert [change.action for change in refused.context["plan"].changes] == ["adopt"]
    assert refused.context["digest"] != shown.context["digest"]
    assert database_snapshot() == snapshot


def test_apply_needs_the_csrf_token(tenant: Tenant) -> None:
    client = signed_in(tenant, enforce_csrf_checks=True)
    digest = upload(signed_in(tenant), tenant, FILE).context["digest"]

    refused = client.post(url("_apply", tenant), {"content": FILE, "plan": digest})

    assert refused.status_code == 403
    assert not Tool.objects.filter(tenant=tenant).exists()


def test_apply_takes_only_posts(tenant: Tenant) -> None:
    assert signed_in(tenant).get(url("_apply", tenant)).status_code == 405


def test_a_file_exported_from_another_tenant_says_so(tenant: Tenant) -> None:
    staging = TenantFactory(slug="acme-staging")

    shown = upload(signed_in(staging), staging, FILE)

    assert shown.context["other_tenant"] == "acme"
    assert "it is applied to <code>acme-staging</code>" in shown.content.decode()


@pytest.mark.parametrize("name", ["", "_export", "_apply"])
def test_members_who_administer_nothing_and_other_tenants_admins_are_turned_away(tenant: Tenant, name: str) -> None:
    theirs = TenantFactory(slug="globex")
    member = signed_in(tenant, role=Membership.Role.MEMBER)
    other_admin = signed_in(theirs)

    # A member opens no admin at all (to the sign-in page); another tenant's admin finds no such tenant.
    assert member.get(url(name, tenant)).status_code == 302
    assert member.post(url(name, tenant), {"content": FILE, "plan": "x"}).status_code == 302
    assert other_admin.get(url(name, tenant)).status_code == 404
    assert other_admin.post(url(name, tenant), {"content": FILE, "plan": "x"}).status_code == 404
    assert not Tool.objects.filter(tenant=tenant).exists()
