"""Bulk changes to a catalog are audited like the admin's own edits: an OpenAPI import (from the admin and from
``manage.py openapi_import``) and an upstream refresh against a real upstream process each leave one activity row
with what they added, changed and removed, and an entry in the admin's history for each row they touched, naming
who made them (the admin, or the ``system`` user and the command or schedule)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse
from mcp import Client

from mcp_platform.activity.models import ActivityRecord
from tenants.admin.audit import SYSTEM_USERNAME
from tenants.federation.services import upstream_add
from tenants.federation.tasks import upstream_refresh_one
from tenants.models import Tenant, Tool
from tests.e2e.upstreams import UpstreamServer, upstream_server
from tests.tenants.openapi.test_openapi_admin import FIXTURES, IMPORT, keep_only, preview

pytestmark = pytest.mark.django_db

PETS_KEPT = ["GET /pets", "POST /pets", "GET /pets/{petId}", "DELETE /pets/{petId}"]
PETS_TOOLS = ["pets_createPet", "pets_deletePet", "pets_get_pets_petId", "pets_listPets"]


def bulk_rows(tenant: Tenant) -> list[ActivityRecord]:
    return list(ActivityRecord.objects.filter(tenant=tenant, kind=ActivityRecord.Kind.ADMIN).order_by("at", "id"))


def tool_history(tenant: Tenant) -> list[LogEntry]:
    tools = [str(pk) for pk in Tool.objects.filter(tenant=tenant).values_list("pk", flat=True)]
    kind = ContentType.objects.get_for_model(Tool)
    return list(LogEntry.objects.filter(content_type=kind, object_id__in=tools).select_related("user"))


def test_an_import_from_the_admin_is_in_the_activity_log_and_the_admins_history(
    admin_client: Any, admin_user: Any, tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    data = keep_only(preview(admin_client, tenant), tenant, PETS_KEPT)
    with django_capture_on_commit_callbacks(execute=True):
        assert admin_client.post(reverse(IMPORT), data).status_code == 302

    (row,) = bulk_rows(tenant)
    assert (row.method, row.target, row.principal) == ("admin/OpenAPI import", "Petstore 3.0", str(admin_user.pk))
    assert row.client_name == admin_user.get_username()
    assert sorted(row.details["added"]) == PETS_TOOLS
    assert row.details["changed"] == [] and row.details["removed"] == []
    history = tool_history(tenant)
    assert sorted(entry.object_repr for entry in history) == PETS_TOOLS
    assert {(entry.user, entry.action_flag) for entry in history} == {(admin_user, ADDITION)}
    assert "OpenAPI import of Petstore 3.0" in history[0].change_message


def test_an_import_by_the_command_names_the_command_and_what_changed_the_second_time(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    document = str(FIXTURES / "petstore-3.0.yaml")
    with django_capture_on_commit_callbacks(execute=True):
        call_command("openapi_import", tenant.slug, document, "--prefix", "f_", "--name", "pets")
    Tool.objects.filter(tenant=tenant, name="f_listPets").update(description="edited by hand")
    with django_capture_on_commit_callbacks(execute=True):
        call_command("openapi_import", tenant.slug, document, "--prefix", "f_", "--name", "pets")

    first, second = bulk_rows(tenant)
    assert (first.method, first.target, first.principal) == ("admin/OpenAPI import", "pets", "")
    assert first.client_name == first.details["actor"] == "manage.py openapi_import"
    assert len(first.details["added"]) == Tool.objects.filter(tenant=tenant).count() > 0
    assert (second.details["added"], second.details["changed"], second.details["removed"]) == ([], ["f_listPets"], [])
    history = tool_history(tenant)
    assert {entry.user.get_username() for entry in history} == {SYSTEM_USERNAME}
    assert any("(manage.py openapi_import)" in entry.change_message for entry in history)
    assert not history[0].user.is_active and not history[0].user.has_usable_password()


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[UpstreamServer]:
    # The outbound door refuses loopback unless a deployment allows it; this test does, explicitly.
    allowed = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}
    with ExitStack() as stack, override_settings(MCP_PLATFORM=allowed):
        yield upstream_server(stack, tmp_path / "upstream")


async def grow(url: str, name: str) -> None:
    async with Client(url, cache=None) as client:
        await client.call_tool("grow", {"name": name})


def test_a_scheduled_refresh_of_a_real_upstream_is_in_the_activity_log_and_the_admins_history(
    tenant: Tenant, upstream: UpstreamServer, django_capture_on_commit_callbacks: Any
) -> None:
    added, _ = upstream_add(tenant=tenant, name="up", url=upstream.url)
    async_to_sync(grow)(upstream.url, "sprout")

    with django_capture_on_commit_callbacks(execute=True):
        assert upstream_refresh_one(added.pk) == "1 added, 0 updated, 0 removed"

    refresh = [row for row in bulk_rows(tenant) if row.method == "admin/upstream refresh"]
    (row,) = refresh
    assert (row.target, row.principal, row.client_name) == ("up", "", "system (scheduled refresh)")
    assert (row.details["added"], row.details["changed"], row.details["removed"]) == (["up_sprout"], [], [])
    sprout = Tool.objects.get(tenant=tenant, name="up_sprout")
    (entry,) = LogEntry.objects.filter(content_type=ContentType.objects.get_for_model(Tool), object_id=str(sprout.pk))
    assert (entry.user.get_username(), entry.action_flag) == (SYSTEM_USERNAME, ADDITION)
    assert entry.change_message == "Created by the upstream refresh of up (system (scheduled refresh))."
