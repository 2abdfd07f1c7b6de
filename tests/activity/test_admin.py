"""The activity log and usage dashboard in the admin, as a tenant's admin (made only by membership): own rows only,
filters, streaming exports, read-only rows, and the dashboard's figures."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from mcp_platform.activity.models import ActivityRecord
from mcp_platform.activity.services import activity_admin_change_record, activity_bulk_change_record
from tenants.bulk_changes import Actor, BulkChange
from tenants.models import Membership, Tenant
from tests.factories import MembershipFactory, TenantFactory, UserFactory

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:activity_activityrecord_changelist"


@pytest.fixture
def ours() -> Tenant:
    return TenantFactory(slug="acme", name="Acme")


@pytest.fixture
def theirs() -> Tenant:
    return TenantFactory(slug="globex", name="Globex")


@pytest.fixture
def admin_client(client: Client, ours: Tenant) -> Client:
    user = UserFactory(username="ada")
    MembershipFactory(tenant=ours, user=user, role=Membership.Role.ADMIN)
    client.force_login(user)
    return client


def row(tenant: Tenant, target: str, *, outcome: str = "ok", ago: dt.timedelta = dt.timedelta(), **fields: Any):
    return ActivityRecord.objects.create(
        tenant=tenant,
        at=timezone.now() - ago,
        target=target,
        outcome=outcome,
        client_name=fields.pop("client_name", "Claude"),
        method=fields.pop("method", "tools/call"),
        principal=fields.pop("principal", "7"),
        duration_ms=fields.pop("duration_ms", 10.0),
        **fields,
    )


def listed(response: Any) -> list[str]:
    return [record.target for record in response.context["cl"].result_list]


def test_a_tenant_admin_sees_only_their_tenants_rows(admin_client: Client, ours: Tenant, theirs: Tenant) -> None:
    row(ours, "weather")
    row(theirs, "globex_secret_tool")
    page = admin_client.get(reverse(CHANGELIST))
    assert page.status_code == 200
    assert listed(page) == ["weather"]
    assert "globex" not in page.content.decode()


def test_rows_filter_by_time_tool_outcome_principal_and_client(admin_client: Client, ours: Tenant) -> None:
    row(ours, "weather", outcome="tool_error", principal="7", client_name="Claude")
    row(ours, "search", principal="8", client_name="Cursor", ago=dt.timedelta(hours=3))
    row(ours, "old", ago=dt.timedelta(days=10))
    url = reverse(CHANGELIST)
    assert listed(admin_client.get(url, {"period": "1h"})) == ["weather"]
    assert set(listed(admin_client.get(url, {"period": "7d"}))) == {"weather", "search"}
    assert listed(admin_client.get(url, {"target": "search"})) == ["search"]
    assert listed(admin_client.get(url, {"outcome__exact": "tool_error"})) == ["weather"]
    assert listed(admin_client.get(url, {"principal": "8"})) == ["search"]
    assert listed(admin_client.get(url, {"client": "Cursor"})) == ["search"]


def filter_choices(page: Any, parameter: str) -> list[tuple[str, str]]:
    [spec] = [spec for spec in page.context["cl"].filter_specs if getattr(spec, "parameter_name", "") == parameter]
    return [(str(value), str(label)) for value, label in spec.lookup_choices]


def test_filters_offer_calls_and_admin_changes_apart_sorted_by_name(
    admin_client: Client, ours: Tenant, theirs: Tenant
) -> None:
    row(ours, "weather", client_name="cursor")
    row(ours, "Alerts", client_name="Claude")
    row(ours, "docs://handbook", method="resources/read", client_name="zed")
    row(ours, "triage", method="prompts/get")
    for _ in range(3):
        row(ours, "search")
    row(theirs, "globex_tool", client_name="Globex robot")
    for object_type, name in (("tool", "weather"), ("secret", "api"), ("tool", "search")):
        activity_admin_change_record(
            tenant_id=ours.pk,
            user_id=1,
            action="change",
            object_type=object_type,
            object_repr=name,
            object_id="1",
            before={},
            after={},
        )
    activity_bulk_change_record(
        change=BulkChange(tenant_id=ours.pk, operation="OpenAPI import", source="petstore", actor=Actor("cli"))
    )
    url = reverse(CHANGELIST)
    page = admin_client.get(url)

    assert filter_choices(page, "target") == [
        ("Alerts", "Alerts"),
        ("docs://handbook", "docs://handbook (resource)"),
        ("search", "search"),
        ("triage", "triage (prompt)"),
        ("weather", "weather"),
    ]
    assert filter_choices(page, "object_type") == [
        ("bulk:OpenAPI import", "OpenAPI import (bulk)"),
        ("secret", "secret"),
        ("tool", "tool"),
    ]
    assert filter_choices(page, "client") == [("Claude", "Claude"), ("cursor", "cursor"), ("zed", "zed")]
    assert listed(admin_client.get(url, {"target": "weather"})) == ["weather"], "calls only, not the tool's changes"
    assert sorted(listed(admin_client.get(url, {"object_type": "tool"}))) == ["tool: search", "tool: weather"]
    assert listed(admin_client.get(url, {"object_type": "bulk:OpenAPI import"})) == ["petstore"]


def test_rows_are_read_only(admin_client: Client, ours: Tenant) -> None:
    record = row(ours, "weather")
    change = reverse("admin:activity_activityrecord_change", args=[record.pk])
    assert admin_client.get(change).status_code == 200
    admin_client.post(change, {"target": "forged"})
    assert admin_client.get(reverse("admin:activity_activityrecord_add")).status_code == 403
    assert (
        admin_client.post(
            reverse("admin:activity_activityrecord_delete", args=[record.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert ActivityRecord.objects.get(pk=record.pk).target == "weather"


def test_another_tenants_row_is_a_404(admin_client: Client, theirs: Tenant) -> None:
    record = row(theirs, "globex_tool")
    assert admin_client.get(reverse("admin:activity_activityrecord_change", args=[record.pk])).status_code == 404


def test_csv_export_streams_the_filtered_rows_with_formulas_defused(
    admin_client: Client, ours: Tenant, theirs: Tenant
) -> None:
    row(ours, "weather", outcome="error", error_code=-32602)
    row(ours, "=HYPERLINK(1)")
    row(theirs, "globex_tool", outcome="error")
    response = admin_client.get(reverse("admin:activity_activityrecord_export_csv"), {"outcome__exact": "error"})
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(line["tenant"], line["target"], line["error_code"]) for line in lines] == [("acme", "weather", "-32602")]
    everything = admin_client.get(reverse("admin:activity_activityrecord_export_csv"))
    targets = [line["target"] for line in csv.DictReader(io.StringIO(b"".join(everything.streaming_content).decode()))]
    assert sorted(targets) == ["'=HYPERLINK(1)", "weather"]


def test_json_lines_export_has_one_object_per_row(admin_client: Client, ours: Tenant) -> None:
    row(ours, "weather", details={"arguments": {"city": "Oslo"}})
    response = admin_client.get(reverse("admin:activity_activityrecord_export_jsonl"))
    [line] = b"".join(response.streaming_content).decode().splitlines()
    record = json.loads(line)
    assert (record["tenant"], record["target"], record["details"]) == (
        "acme",
        "weather",
        {"arguments": {"city": "Oslo"}},
    )


def test_the_dashboard_shows_calls_errors_and_latency_per_tool_and_client(
    admin_client: Client, ours: Tenant, theirs: Tenant
) -> None:
    for duration in (10.0, 20.0, 30.0, 40.0):
        row(ours, "weather", duration_ms=duration)
    row(ours, "search", outcome="error", client_name="Cursor", duration_ms=5.0)
    row(ours, "weather", ago=dt.timedelta(days=2))
    row(theirs, "globex_tool")
    page = admin_client.get(reverse("admin:activity_activityrecord_usage"), {"window": "24h"})
    assert page.status_code == 200
    summary = page.context["summary"]
    assert summary["totals"] == {"calls": 5, "errors": 1}
    tools = {u.name: u for u in summary["tools"]}
    assert (tools["weather"].calls, tools["weather"].errors, tools["weather"].p50_ms) == (4, 0, 25.0)
    assert tools["weather"].p95_ms == pytest.approx(38.5)
    assert {u.name: u.calls for u in summary["clients"]} == {"Claude": 4, "Cursor": 1}
    assert "<svg" in page.content.decode() and "globex" not in page.content.decode()
    month = admin_client.get(reverse("admin:activity_activityrecord_usage"), {"window": "30d"})
    assert month.context["summary"]["totals"]["calls"] == 6


def test_the_dashboards_rows_and_columns_lead_to_the_log_filtered_to_them(
    admin_client: Client, ours: Tenant, theirs: Tenant
) -> None:
    row(ours, "weather", client_name="Claude")
    row(ours, "weather", client_name="Cursor", ago=dt.timedelta(hours=3))
    row(ours, "search", client_name="Cursor")
    row(ours, "weather", ago=dt.timedelta(days=2))
    row(theirs, "weather", client_name="Cursor")
    page = admin_client.get(reverse("admin:activity_activityrecord_usage"), {"window": "24h"})
    tools = {r.usage.name: r.href for r in page.context["tools"]}
    clients = {r.usage.name: r.href for r in page.context["clients"]}
    busy = [c for c in page.context["timeline"].columns if c.calls]

    def log(href: str) -> list[tuple[str, str]]:
        response = admin_client.get(href)
        assert response.status_code == 200, href
        return sorted((r.target, r.client_name) for r in response.context["cl"].result_list)

    assert log(tools["weather"]) == [("weather", "Claude"), ("weather", "Cursor")]
    assert log(clients["Cursor"]) == [("search", "Cursor"), ("weather", "Cursor")]
    assert [(c.calls, log(c.href)) for c in busy] == [
        (1, [("weather", "Cursor")]),
        (2, [("search", "Cursor"), ("weather", "Claude")]),
    ]
    html = page.content.decode()
    assert "3 calls" in html and "0 errors" in html and "1 call, 0 errors" in html and "1 calls" not in html
    assert f'href="{escape(tools["weather"])}"' in html


def test_the_dashboard_refuses_another_tenant(admin_client: Client, theirs: Tenant) -> None:
    assert admin_client.get(reverse("admin:activity_activityrecord_usage"), {"tenant": theirs.pk}).status_code == 404


def test_platform_staff_see_usage_across_tenants(client: Client, ours: Tenant, theirs: Tenant) -> None:
    row(ours, "weather")
    row(theirs, "globex_tool")
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    page = client.get(reverse("admin:activity_activityrecord_usage"))
    assert page.context["summary"]["totals"]["calls"] == 2
    only = client.get(reverse("admin:activity_activityrecord_usage"), {"tenant": theirs.pk})
    assert [u.name for u in only.context["summary"]["tools"]] == ["globex_tool"]


def test_the_log_and_the_dashboard_tell_a_tenants_servers_apart(admin_client: Client, ours: Tenant) -> None:
    from tenants.servers import server_create

    server_create(tenant=ours, slug="reader", title="Reader")
    row(ours, "search", server="reader")
    row(ours, "search", server="reader", outcome="error")
    row(ours, "delete_all")
    log = admin_client.get(reverse(CHANGELIST), {"kind__exact": "call"})
    assert filter_choices(log, "server") == [("-", "(default server)"), ("reader", "reader")]
    on_reader = admin_client.get(reverse(CHANGELIST), {"server": "reader"})
    on_default = admin_client.get(reverse(CHANGELIST), {"server": "-"})
    assert listed(on_reader) == ["search", "search"] and listed(on_default) == ["delete_all"]

    usage = reverse("admin:activity_activityrecord_usage")
    everything = admin_client.get(usage, {"window": "24h"})
    per_server = {r.usage.name: (r.usage.calls, r.usage.errors) for r in everything.context["server_rows"]}
    assert per_server == {"reader": (2, 1), "(default server)": (1, 0)}
    hrefs = {r.usage.name: r.href for r in everything.context["server_rows"]}
    assert listed(admin_client.get(hrefs["(default server)"])) == ["delete_all"]
    reader = admin_client.get(usage, {"window": "24h", "server": "reader"})
    assert reader.context["summary"]["totals"] == {"calls": 2, "errors": 1}
    assert 'option value="reader" selected' in reader.content.decode()
    default = admin_client.get(usage, {"window": "24h", "server": "-"})
    assert [u.name for u in default.context["summary"]["tools"]] == ["delete_all"]
    unknown = admin_client.get(usage, {"window": "24h", "server": "nobody"})
    assert unknown.context["summary"]["totals"]["calls"] == 3, "a server the tenant has not is no filter"
