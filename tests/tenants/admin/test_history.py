"""The history pages in the admin: an object's versions (who, when, what changed), a version against the current
row, its restore (through the services, itself a new version, in the activity log), deleted rows recovered; another
tenant's history out of reach; fields the person may not change left as they are."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from django.urls import reverse
from reversion.models import Version

from mcp_platform.activity.models import ActivityRecord
from tenants import services
from tenants.federation.mirror import mirror_apply
from tenants.models import Tenant, Tool, Upstream
from tenants.secrets import secret_delete, secret_set
from tests.admin_objects import person
from tests.gateway.conftest import META, V, request, rpc
from tests.tenants.admin.test_service_backed import tool_form
from tests.tenants.federation.test_mirror import listing

pytestmark = pytest.mark.django_db


@pytest.fixture
def ours_admin(client: Client, ours: Tenant) -> Any:
    user = person(ours, "admin", "alice")
    client.force_login(user)
    return user


def url(view: str, *args: Any, model: str = "tool") -> str:
    return reverse(f"admin:tenants_{model}_{view}", args=args)


def listed_description(tenant: Tenant, name: str) -> str:
    """The tool's description as a client sees it: ``tools/list`` on the tenant's endpoint (2026-07-28)."""
    headers = {"mcp-protocol-version": V, "mcp-method": "tools/list"}
    reply = async_to_sync(request)(
        "POST", f"/t/{tenant.slug}/mcp", body=rpc("tools/list", {"_meta": META}), headers=headers
    )
    assert reply.status == 200, reply.body
    [tool] = [t for t in reply.json()["result"]["tools"] if t["name"] == name]
    return str(tool["description"])


def edit(client: Client, tool: Tool, **changes: Any) -> None:
    form = tool_form(tool.tenant, name=tool.name, **changes)
    del form["tenant"]  # read-only once the tool exists
    assert client.post(url("change", tool.pk), form).status_code == 302


def test_a_tool_edited_twice_is_rolled_back_to_its_first_version(
    client: Client, ours: Tenant, ours_admin: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(url("add"), tool_form(ours, name="weather", description="Sunny.")).status_code == 302
        tool = Tool.objects.get(tenant=ours, name="weather")
        edit(client, tool, description="Cloudy.")
        edit(client, tool, description="Rainy.", input_schema=json.dumps({"type": "object", "title": "v3"}))
    assert listed_description(ours, "weather") == "Rainy."

    history = client.get(url("history", tool.pk))
    versions = history.context["versions"]
    assert [(v["number"], v["who"], v["changed"]) for v in versions] == [
        (3, "alice", "Description, Input schema"),
        (2, "alice", "Description"),
        (1, "alice", "Created"),
    ]
    assert versions[1]["comment"] == "Changed tool weather: description"

    page = client.get(versions[-1]["url"])
    changed = {diff.name: diff for diff in page.context["changed"]}
    assert set(changed) == {"description", "input_schema"}
    assert (changed["description"].first, changed["description"].second) == ("Rainy.", "Sunny.")
    assert [(line.kind, line.text) for line in changed["input_schema"].lines if line.kind != "same"] == [
        ("removed", '  "title": "v3",'),
        ("added", '  "properties": {},'),
    ], "JSON as sorted, pretty-printed lines: what is there now (removed by a restore), what this version has"
    assert b"Restore this version" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        restored = client.post(versions[-1]["url"])

    assert restored.status_code == 302 and restored["Location"] == url("history", tool.pk)
    assert listed_description(ours, "weather") == "Sunny."
    after = client.get(url("history", tool.pk)).context["versions"]
    assert len(after) == 4
    assert after[0]["comment"].startswith("Restored tool weather to version 1 of ")
    record = ActivityRecord.objects.get(tenant=ours, method="admin/restore")
    assert record.principal == str(ours_admin.pk)
    assert record.details["before"] == {"description": "Rainy.", "input_schema": {"type": "object", "title": "v3"}}
    assert record.details["after"] == {"description": "Sunny.", "input_schema": {"type": "object", "properties": {}}}


def test_another_tenants_admin_cannot_see_or_restore_its_history(client: Client, ours: Tenant, theirs: Tenant) -> None:
    tool = services.tool_create(tenant=ours, name="weather", description="Sunny.", config={"content": []})
    services.tool_update(tool=tool, data={"description": "Rainy."})
    gone = services.tool_create(tenant=ours, name="gone", config={"content": []})
    gone_pk = gone.pk
    services.tool_delete(tool=gone)
    first = Version.objects.get_for_object(tool).order_by("pk").first()
    deleted = Version.objects.get_for_object_reference(Tool, gone_pk).get()
    assert first is not None
    client.force_login(person(theirs, "owner", "mallory"))

    assert client.get(url("history", tool.pk)).status_code == 404
    for target in (url("version", tool.pk, first.pk), url("version", gone_pk, deleted.pk)):
        assert client.get(target).status_code == 404
        assert client.post(target).status_code == 404
    recover = client.get(url("deleted"))
    assert recover.status_code == 200 and recover.context["rows"] == []
    assert Tool.objects.get(pk=tool.pk).description == "Rainy."
    assert not Tool.objects.filter(name="gone").exists()


def test_a_version_whose_secret_is_gone_says_so_and_changes_nothing(
    client: Client, ours: Tenant, ours_admin: Any
) -> None:
    secret_set(tenant=ours, name="old-key", value="one")
    secret_set(tenant=ours, name="new-key", value="two")
    config = {"method": "GET", "url": "https://api.example/", "auth": {"type": "bearer", "secret": "old-key"}}
    tool = services.tool_create(tenant=ours, name="call", backend="http", config=config)
    services.tool_update(tool=tool, data={"config": {**config, "auth": {"type": "bearer", "secret": "new-key"}}})
    secret_delete(tenant=ours, name="old-key")
    first = Version.objects.get_for_object(tool).order_by("pk").first()
    assert first is not None

    shown = client.get(url("version", tool.pk, first.pk))
    posted = client.post(url("version", tool.pk, first.pk))

    reason = "This version uses the secret &#x27;old-key&#x27;, which acme no longer has"
    assert reason in shown.content.decode() and b"Restore this version" not in shown.content
    assert posted.status_code == 200 and reason in posted.content.decode()
    assert Tool.objects.get(pk=tool.pk).config["auth"]["secret"] == "new-key"
    assert Version.objects.get_for_object(tool).count() == 2


def test_a_deleted_tool_is_recovered_from_the_recover_page(client: Client, ours: Tenant, ours_admin: Any) -> None:
    tool = services.tool_create(tenant=ours, name="weather", description="Sunny.", config={"content": []})
    pk = tool.pk
    assert client.post(url("delete", pk), {"post": "yes"}).status_code == 302
    assert b"Recover deleted tools" in client.get(url("changelist")).content

    [row] = client.get(url("deleted")).context["rows"]
    assert row["name"] == "weather"
    page = client.get(row["url"])
    assert b"Recover this tool" in page.content
    recovered = client.post(row["url"])

    tool = Tool.objects.get(tenant=ours, name="weather")
    assert recovered.status_code == 302 and recovered["Location"] == url("history", tool.pk)
    assert tool.description == "Sunny."
    assert ActivityRecord.objects.filter(tenant=ours, method="admin/recover", target="tool: weather").exists()
    assert client.get(url("deleted")).context["rows"] == [], "a recovered tool is no longer deleted"


def test_fields_the_person_may_not_change_are_shown_but_not_restored(
    client: Client, ours: Tenant, ours_admin: Any
) -> None:
    services.tenant_update(tenant=ours, data={"instructions": "Be brief."})
    services.tenant_update(
        tenant=ours, data={"instructions": "Be thorough.", "outbound_allowed_networks": ["10.0.0.0/8"]}
    )
    first = Version.objects.get_for_object(ours).order_by("pk").first()
    assert first is not None

    page = client.get(url("version", ours.pk, first.pk, model="tenant"))
    assert [d.name for d in page.context["kept"]] == ["outbound_allowed_networks"], "only superusers widen it"
    assert client.post(url("version", ours.pk, first.pk, model="tenant")).status_code == 302

    ours.refresh_from_db()
    assert (ours.instructions, ours.outbound_allowed_networks) == ("Be brief.", ["10.0.0.0/8"])


def test_a_mirrored_tools_history_is_its_upstreams(client: Client, ours: Tenant, ours_admin: Any) -> None:
    upstream = Upstream.objects.create(tenant=ours, name="up", url="https://up.example/mcp", prefix="up_")
    mirror_apply(upstream=upstream, listing=listing())
    mirrored = Tool.objects.get(upstream=upstream, name="up_echo")

    page = client.get(url("history", mirrored.pk))

    assert page.status_code == 200 and "versions" not in page.context
    assert page.context["history_elsewhere"]["url"] == url("history", upstream.pk, model="upstream")
