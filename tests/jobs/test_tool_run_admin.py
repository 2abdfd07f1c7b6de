"""Tool runs in the admin: a tenant's admin cancels unfinished runs of their tenant only, and filters by tool,
status and principal."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.contrib.admin.sites import site
from django.contrib.admin.utils import quote
from django.db.models import F
from django.test import Client
from django.urls import reverse

from mcp_platform.jobs.admin import ToolRunAdmin
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


def test_the_live_endpoint_answers_for_the_tenants_runs_only(signed_in_admin: Client, tenant: Any) -> None:
    mine = admin_object(ToolRun, tenant)
    ToolRun.objects.filter(pk=mine.pk).update(progress=3, progress_total=10, progress_message="Counted 3 of 10")
    theirs = admin_object(ToolRun, TenantFactory(slug="globex"))

    answer = signed_in_admin.get(reverse("admin:jobs_toolrun_live"), {"id": [mine.pk, theirs.pk, "no-such-run"]})

    assert answer.json() == {
        "runs": {
            mine.pk: {
                "status": "working",
                "statusLabel": "Working",
                "statusMessage": "",
                "progress": 3.0,
                "total": 10.0,
                "progressMessage": "Counted 3 of 10",
                "finished": False,
                "cancellable": True,
                "duration": "running",
            }
        }
    }


def test_the_list_shows_progress_as_a_bar_the_page_can_update(signed_in_admin: Client, tenant: Any) -> None:
    run = admin_object(ToolRun, tenant)
    ToolRun.objects.filter(pk=run.pk).update(progress=3, progress_total=10)

    page = signed_in_admin.get(reverse("admin:jobs_toolrun_changelist")).content.decode()

    assert f'<progress max="10.0" value="3.0" aria-label="Progress of {run.tool_name}"></progress> 3 of 10' in page
    assert f'data-run="{run.pk}" data-run-field="status" data-run-finished="0"' in page
    assert "admin-tool-runs.js" in page


def test_a_runs_page_cancels_it_with_its_button(signed_in_admin: Client, tenant: Any) -> None:
    run = admin_object(ToolRun, tenant)
    ToolRun.objects.filter(pk=run.pk).update(id="run_with/odd_chars")  # task ids are URL-safe base64: "_" and "-"
    run = ToolRun.objects.get(pk="run_with/odd_chars")
    change = reverse("admin:jobs_toolrun_change", args=[quote(run.pk)])
    cancel = reverse("admin:jobs_toolrun_cancel", args=[quote(run.pk)])

    assert "Cancel this run" in signed_in_admin.get(change).content.decode()
    assert signed_in_admin.get(cancel).status_code == 405
    done = signed_in_admin.post(cancel, follow=True)
    again = signed_in_admin.post(cancel, follow=True)

    assert done.redirect_chain == [(change, 302)]
    assert ToolRun.objects.get(pk=run.pk).status_message == "Cancelled in the admin"
    assert [str(m) for m in done.context["messages"]] == ["The run was cancelled; a worker running it is told to stop."]
    assert [str(m) for m in again.context["messages"]] == ["The run had already finished or expired."]
    assert "Cancel this run" not in again.content.decode()


def test_another_tenants_run_cannot_be_cancelled_from_its_page(signed_in_admin: Client) -> None:
    theirs = admin_object(ToolRun, TenantFactory(slug="globex"))

    refused = signed_in_admin.post(reverse("admin:jobs_toolrun_cancel", args=[theirs.pk]))

    assert refused.status_code == 404
    assert ToolRun.objects.get(pk=theirs.pk).status == "working"


def test_the_principal_filter_offers_the_tenants_callers_only(signed_in_admin: Client, tenant: Any) -> None:
    admin_object(ToolRun, tenant)
    other = admin_object(ToolRun, TenantFactory(slug="globex"))
    ToolRun.objects.filter(pk=other.pk).update(principal="user:globex-person")

    page = signed_in_admin.get(reverse("admin:jobs_toolrun_changelist"))
    principals = next(spec for spec in page.context["cl"].filter_specs if spec.title == "person")

    assert [value for value, _ in principals.lookup_choices] == ["user:1"]


def test_a_runs_duration_is_its_run_time_and_running_until_it_ends(signed_in_admin: Client, tenant: Any) -> None:
    running = admin_object(ToolRun, tenant)
    done = admin_object(ToolRun, tenant)
    ToolRun.objects.filter(pk=done.pk).update(
        status=ToolRun.Status.COMPLETED, finished_at=F("created_at") + dt.timedelta(seconds=5.8)
    )

    page = signed_in_admin.get(reverse("admin:jobs_toolrun_changelist"))
    durations = {run.pk: ToolRunAdmin(ToolRun, site).duration(run) for run in page.context["cl"].result_list}

    assert durations == {running.pk: "running", done.pk: "5.8 s"}
    assert f'<span data-run="{done.pk}" data-run-field="duration">5.8 s</span>' in page.content.decode()
    assert f'<span data-run="{running.pk}" data-run-field="duration">running</span>' in page.content.decode()


def test_a_tenant_admin_sees_no_internals_of_a_run(signed_in_admin: Client, tenant: Any) -> None:
    run = admin_object(ToolRun, tenant)
    ToolRun.objects.filter(pk=run.pk).update(quota_key="user:1", generation=3, takeovers=2)

    page = signed_in_admin.get(reverse("admin:jobs_toolrun_change", args=[quote(run.pk)])).content.decode()
    listed = signed_in_admin.get(reverse("admin:jobs_toolrun_changelist")).content.decode()

    assert "Tool name" in page and "Duration" in page
    for internal in ("Internals", "Generation", "Lease until", "Takeovers", "Quota key", "Scheduled at"):
        assert internal not in page and internal not in listed
    assert "field-tenant" not in listed, "one tenant: no tenant column"


def test_platform_staff_find_a_runs_internals_in_a_collapsed_section(client: Client, tenant: Any) -> None:
    run = admin_object(ToolRun, tenant)
    ToolRun.objects.filter(pk=run.pk).update(quota_key="user:1", generation=3, takeovers=2)
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))

    page = client.get(reverse("admin:jobs_toolrun_change", args=[quote(run.pk)])).content.decode()

    main, internals = page.split('<fieldset class="module aligned collapse"')
    assert '<h2 id="fieldset-0-1-heading" class="fieldset-heading">Internals</h2>' in internals
    for internal in ("Generation", "Lease until", "Takeovers", "Quota key"):
        assert internal in internals and internal not in main
