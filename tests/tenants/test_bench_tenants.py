"""The benchmark's tenants load through the services, idempotently, and its progress tool stamps each step."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from tenants.builtin.bench_fixtures import STATIC_TEXT, catalog_tool_name
from tenants.catalog import TenantCatalog
from tenants.models import Tenant, Tool

pytestmark = pytest.mark.django_db


def load(catalog_tools: int) -> str:
    out = io.StringIO()
    call_command("load_bench_tenants", "--catalog-tools", str(catalog_tools), stdout=out)
    return out.getvalue()


def tool_names(slug: str) -> list[str]:
    return sorted(Tool.objects.filter(tenant__slug=slug).values_list("name", flat=True))


def test_loading_creates_the_missing_catalog_tools_only() -> None:
    load(3)
    first = list(Tool.objects.filter(tenant__slug="bench-catalog").values_list("pk", flat=True).order_by("pk"))
    output = load(5)

    assert tool_names("bench") == ["echo", "progress", "static_info"]
    assert tool_names("bench-catalog") == [catalog_tool_name(i) for i in range(5)]
    assert list(Tool.objects.filter(tenant__slug="bench-catalog", pk__in=first).values_list("pk", flat=True)) == first
    assert "2/2 catalog tools created" in output
    assert "(5 tools) are ready" in output


def test_the_static_tool_answers_the_text_the_peer_is_checked_against(make_context: Any) -> None:
    load(0)
    catalog = TenantCatalog(Tenant.objects.get(slug="bench"))
    ctx, _ = make_context()
    tool = async_to_sync(catalog.get_tool)("static_info")
    assert tool is not None

    result = async_to_sync(catalog.invoke_tool)(tool, {}, ctx)

    assert result == {"content": [{"type": "text", "text": STATIC_TEXT}]}


def test_progress_messages_are_the_emit_times_in_nanoseconds(make_context: Any) -> None:
    load(0)
    catalog = TenantCatalog(Tenant.objects.get(slug="bench"))
    ctx, outbound = make_context(progress_token="bench")
    tool = async_to_sync(catalog.get_tool)("progress")
    assert tool is not None

    before = time.time_ns()
    result = async_to_sync(catalog.invoke_tool)(tool, {"steps": 3, "interval_ms": 0}, ctx)
    after = time.time_ns()

    stamps = [int(params["message"]) for _, params in outbound.notifications]
    assert [params["progress"] for _, params in outbound.notifications] == [1, 2, 3]
    assert before <= stamps[0] <= stamps[1] <= stamps[2] <= after
    assert result == "Reported 3 steps."
