"""``tenant_export`` and ``tenant_apply`` as CI runs them: export to a file, ``--plan`` (nothing changes), apply,
another tenant with ``--tenant``, the file on standard input, and bad files refused by line with nothing changed."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from mcp_platform.catalog_files.exporting import tenant_export
from tenants.models import Tenant, Tool
from tests.catalog_files.conftest import catalog_make, database_snapshot

pytestmark = pytest.mark.django_db

FILE = "version: 1\ntenant: acme\ntools:\n  - name: search\n    config: {content: [{type: text, text: found}]}\n"


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_export_writes_the_file_and_names_the_schema_at_the_public_origin(tenant: Tenant, tmp_path: Path) -> None:
    catalog_make(tenant)
    target = tmp_path / "acme.yaml"

    with override_settings(MCP_PLATFORM={**settings.MCP_PLATFORM, "PUBLIC_BASE_URL": "https://mcp.example"}):
        run("tenant_export", "acme", "-o", str(target))
        printed = run("tenant_export", "acme")

    assert target.read_text() == printed == tenant_export(tenant, base_url="https://mcp.example")
    assert printed.startswith("# yaml-language-server: $schema=https://mcp.example/static/schemas/")


def test_plan_shows_the_changes_and_makes_none(tenant: Tenant, tmp_path: Path) -> None:
    path = tmp_path / "acme.yaml"
    path.write_text(FILE)

    printed = run("tenant_apply", str(path), "--plan")

    assert printed.splitlines() == [
        "Plan for tenant acme:",
        "  + tool search",
        "1 to add, 0 to change, 0 to take over, 0 to remove.",
    ]
    assert not Tool.objects.filter(tenant=tenant).exists()


def test_apply_makes_the_changes_and_a_second_run_has_nothing_to_do(tenant: Tenant, tmp_path: Path) -> None:
    path = tmp_path / "acme.yaml"
    path.write_text(FILE)

    first = run("tenant_apply", str(path))
    second = run("tenant_apply", str(path))

    assert first.splitlines()[-1] == "Applied."
    assert second.splitlines() == [
        "Plan for tenant acme:",
        "No changes: the tenant is as the file says.",
        "Nothing to apply.",
    ]
    assert Tool.objects.get(tenant=tenant).name == "search"


def test_apply_reads_standard_input_and_applies_to_the_tenant_named(
    tenant: Tenant, empty_tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FILE.encode())))

    run("tenant_apply", "-", "--tenant", "acme-staging")

    assert Tool.objects.get(tenant=empty_tenant).name == "search"
    assert not Tool.objects.filter(tenant=tenant).exists()


def test_a_bad_file_fails_the_command_with_its_lines_and_changes_nothing(tenant: Tenant, tmp_path: Path) -> None:
    path = tmp_path / "acme.yaml"
    path.write_text(FILE + "  - name: search\n    titel: again\n")
    snapshot = database_snapshot()

    with pytest.raises(CommandError) as failed:
        run("tenant_apply", str(path))

    assert str(failed.value).splitlines() == [
        f"{path} cannot be applied; nothing was changed:",
        "line 7 (tools[1].titel): unknown key 'titel': the keys here are name, title, description, backend, config, "
        "input_schema, output_schema, annotations, icons, task_support, enabled, required_scopes, tags",
    ]
    assert database_snapshot() == snapshot


def test_a_huge_file_is_refused_unread(tenant: Tenant, tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"#" * (5 * 1024 * 1024))

    with pytest.raises(CommandError, match="the file is 5,242,880 bytes; the limit is 2,097,152"):
        run("tenant_apply", str(path), "--plan")


def test_a_file_without_a_tenant_or_for_no_tenant_is_refused(tenant: Tenant, tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("version: 1\n")

    with pytest.raises(CommandError, match="names no tenant"):
        run("tenant_apply", str(path))
    with pytest.raises(CommandError, match="there is no tenant 'nobody'"):
        run("tenant_apply", str(path), "--tenant", "nobody")
    with pytest.raises(CommandError, match="there is no tenant 'nobody'"):
        run("tenant_export", "nobody")
