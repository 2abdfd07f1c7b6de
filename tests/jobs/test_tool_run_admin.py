"""Tool runs in the admin: a tenant's admin cancels unfinished runs of their tenant only, and filters by tool,
status and principal."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from mcp_platform.jobs.models import ToolRun
from tests.admin_objects import admin_object
from tests.factories import MembershipFactory, TenantFactory, UserFactory


@pytest.fixture
def signed_in_admin(client: Client, tenant: Any, settings: Any) -> Client:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    user = UserFactory(username="ada")
    MembershipFactory(tenant=tenant, user=user, role="admin")
    client.force_login(user)
    return client


def test_an_admin_cancels_unfinished_runs_of_their_tenant_only(signed_in_admin: Client, tenant: Any) -> None:
    mine = admin_object(ToolRun, tenant)
    finished = admin_object(ToolRun, tenant)
    ToolRun.objects.filter(pk=finished.pk).update(status=ToolRun.Status.COMPLETED)
    theirs = admin_object(ToolRun, TenantFactory(slug="globex"))

    response = signed_in_admin.post(
        reverse("admin:jobs_toolrun_changelist"),
        {"action": "cancel_runs", "_selected_action": [mine.pk, finished.pk, theirs.pk], "index": "0"},
        follow=True,
    )

    statuses = dict(ToolRun.objects.values_list("pk", "status"))
    assert statuses == {mine.pk: "cancelled", finished.pk: "completed", theirs.pk: "working"}
    assert ToolRun.objects.get(pk=mine.pk).status_message == "Cancelled in the admin"
    assert [str(m) for m in response.context["messages"]] == ["1 run(s) cancelled; 1 had already finished or expired."]


def test_runs_filter_by_tool_and_principal_within_the_tenant(signed_in_admin: Client, tenant: Any) -> None:
    run = admin_object(ToolRun, tenant)
    admin_object(ToolRun, TenantFactory(slug="globex"))

    page = signed_in_admin.get(reverse("admin:jobs_toolrun_changelist"), {"tool_name": run.tool_name})
    tools = next(spec for spec in page.context["cl"].filter_specs if spec.title == "tool name")

    assert [r.pk for r in page.context["cl"].result_list] == [run.pk]
    assert list(tools.lookup_choices) == ["acme_tool"]
    assert "globex" not in page.content.decode()
