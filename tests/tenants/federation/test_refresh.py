"""The scheduled refresh against a real SDK upstream process: a tool the upstream gains reaches the catalog,
and an upstream that went away is recorded as the upstream's last error, leaving the catalog as it was."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from mcp import Client

from mcp_platform.celery import app
from tenants.federation.services import upstream_add
from tenants.federation.tasks import upstream_refresh_one
from tenants.models import Tenant, Tool, Upstream
from tests.e2e.upstreams import UpstreamServer

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("loopback_allowed"),
]


async def grow(url: str, name: str) -> None:
    async with Client(url, cache=None) as client:
        await client.call_tool("grow", {"name": name})


def test_beat_refreshes_every_upstream_through_a_registered_task() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["refresh-upstream-catalogs"]
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks
    assert "tenants.federation.tasks.upstream_refresh_one" in app.tasks


def test_a_tool_the_upstream_gained_is_mirrored_by_the_scheduled_refresh(
    tenant: Tenant, sdk_upstream: UpstreamServer
) -> None:
    added, _ = upstream_add(tenant=tenant, name="up", url=sdk_upstream.url)
    async_to_sync(grow)(sdk_upstream.url, "sprout")

    outcome = upstream_refresh_one(added.pk)

    assert outcome == "1 added, 0 updated, 0 removed"
    sprout = Tool.objects.get(tenant=tenant, name="up_sprout")
    assert sprout.description == "Grown tool sprout"


def test_a_refresh_of_a_dead_upstream_records_the_error_and_keeps_the_catalog(
    tenant: Tenant, sdk_upstream: UpstreamServer
) -> None:
    added, _ = upstream_add(tenant=tenant, name="up", url=sdk_upstream.url)
    before = set(Tool.objects.filter(tenant=tenant).values_list("name", flat=True))
    sdk_upstream.kill()

    assert upstream_refresh_one(added.pk) == "failed"

    stored = Upstream.objects.get(pk=added.pk)
    assert "upstream 'up'" in stored.last_error and "ConnectError" in stored.last_error
    assert set(Tool.objects.filter(tenant=tenant).values_list("name", flat=True)) == before
