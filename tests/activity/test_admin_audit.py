"""Admin changes to a tenant's catalog, clients, members and secrets go into its activity log: who, what, before and
after, never a secret's value."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from mcp_platform.activity.models import ActivityRecord
from tenants.models import Membership, Secret, Tenant
from tests.factories import MembershipFactory, PromptFactory, TenantFactory, ToolFactory, UserFactory

pytestmark = pytest.mark.django_db

SECRET_VALUE = "sk-live-never-in-the-log"


@pytest.fixture
def ours() -> Tenant:
    return TenantFactory(slug="acme", name="Acme")


@pytest.fixture
def owner(client: Client, ours: Tenant) -> tuple[Client, int]:
    user = UserFactory(username="olivia")
    MembershipFactory(tenant=ours, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client, user.pk


def audit() -> list[ActivityRecord]:
    return list(ActivityRecord.objects.filter(kind="admin").order_by("id"))


def test_a_tool_change_is_logged_with_the_fields_before_and_after(owner: tuple[Client, int], ours: Tenant) -> None:
    client, user_id = owner
    tool = ToolFactory(tenant=ours, name="weather", description="old words")
    form = {
        "tenant": ours.pk,
        "name": "weather",
        "description": "new words",
        "input_schema": '{"type": "object", "properties": {}}',
        "backend": "static",
        "config": '{"content": [{"type": "text", "text": "hi"}]}',
        "task_support": "forbidden",
        "enabled": "on",
    }
    assert client.post(reverse("admin:tenants_tool_change", args=[tool.pk]), form).status_code == 302
    [entry] = audit()
    assert (entry.tenant_id, entry.principal, entry.method, entry.target) == (
        ours.pk,
        str(user_id),
        "admin/change",
        "tool: weather",
    )
    assert entry.details["before"]["description"] == "old words"
    assert entry.details["after"]["description"] == "new words"
    assert "name" not in entry.details["after"], "only changed fields are recorded"
    assert entry.request_id == "" and entry.details["object_id"] == str(tool.pk)

    page = client.get(reverse("admin:activity_activityrecord_change", args=[entry.pk])).content.decode()
    assert (
        '<tr><th scope="row">Description</th><td><span class="activity-value">old words</span></td>'
        '<td><span class="activity-value">new words</span></td></tr>'
    ) in page
    assert '<div class="readonly">Changed</div>' in page
    assert '<div class="readonly">olivia (olivia@example.com)</div>' in page, "by whom"
    assert "Request id" not in page and "field-request_id" not in page


def test_a_secret_is_logged_without_its_value(owner: tuple[Client, int], ours: Tenant) -> None:
    client, _ = owner
    added = client.post(reverse("admin:tenants_secret_add"), {"tenant": ours.pk, "name": "api", "value": SECRET_VALUE})
    assert added.status_code == 302
    secret = Secret.objects.get(tenant=ours, name="api")
    client.post(reverse("admin:tenants_secret_change", args=[secret.pk]), {"value": SECRET_VALUE + "-2"})
    client.post(reverse("admin:tenants_secret_delete", args=[secret.pk]), {"post": "yes"})
    assert [e.method for e in audit()] == ["admin/create", "admin/change", "admin/delete"]
    assert SECRET_VALUE not in str([(e.target, e.details) for e in audit()])
    assert audit()[0].details["after"]["value"] == "[redacted]"
    assert audit()[2].details["before"]["ciphertext"] == "[redacted]"
    for entry in audit():
        page = client.get(reverse("admin:activity_activityrecord_change", args=[entry.pk])).content.decode()
        assert SECRET_VALUE not in page
    created = client.get(reverse("admin:activity_activityrecord_change", args=[audit()[0].pk])).content.decode()
    assert '<tr><th scope="row">Value</th><td><span class="activity-value">—</span></td>' in created
    assert '<td><span class="activity-value">[redacted]</span></td></tr>' in created


def test_a_member_added_on_the_tenant_page_is_logged(owner: tuple[Client, int], ours: Tenant) -> None:
    client, _ = owner
    UserFactory(username="bob")
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
        "memberships-0-role": "admin",
    }
    assert client.post(reverse("admin:tenants_tenant_change", args=[ours.pk]), form).status_code == 302
    [entry] = [e for e in audit() if e.target.startswith("membership")]
    assert entry.method == "admin/create" and entry.tenant_id == ours.pk
    assert entry.details["after"]["role"] == "admin"


def test_a_deletion_keeps_what_was_deleted(owner: tuple[Client, int], ours: Tenant) -> None:
    client, _ = owner
    prompt = PromptFactory(tenant=ours, name="greet", description="Says hello")
    assert client.post(reverse("admin:tenants_prompt_delete", args=[prompt.pk]), {"post": "yes"}).status_code == 302
    [entry] = audit()
    assert (entry.method, entry.target) == ("admin/delete", "prompt: greet")
    assert entry.details["before"]["description"] == "Says hello" and entry.details["after"] is None


def test_a_save_that_changes_nothing_is_not_logged(owner: tuple[Client, int], ours: Tenant) -> None:
    client, _ = owner
    secret_add = client.post(reverse("admin:tenants_secret_add"), {"tenant": ours.pk, "name": "api", "value": "v"})
    assert secret_add.status_code == 302
    secret = Secret.objects.get(tenant=ours, name="api")
    client.post(reverse("admin:tenants_secret_change", args=[secret.pk]), {"value": ""})
    assert [e.method for e in audit()] == ["admin/create"]
