"""The plan: exactly the changes a file makes (fields before and after), hand-made objects left alone unless the
file names them (then taken over), objects the file made removed when it stops listing them, and the checks the
admin makes (a source's names, secrets, each backend's configuration) on the lines they are about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_platform.catalog_files.exporting import tenant_export
from mcp_platform.catalog_files.planning import Change, FieldChange, Plan, configuration_plan, file_check
from mcp_platform.quotas import services as quotas
from tenants.models import Resource, Tenant, Tool
from tenants.openapi.document import document_parse
from tenants.openapi.importing import openapi_import
from tenants.openapi.translate import ImportOptions
from tests.catalog_files.conftest import PETSTORE, apply, catalog_make, problems_of
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db

BASE = """\
version: 1
tenant: acme
tools:
  - name: search
    description: Search the docs.
    config: {content: [{type: text, text: found}]}
  - name: fetch
    description: Fetch a page.
    config: {content: [{type: text, text: fetched}]}
resources:
  - uri: docs://readme
    name: readme
    text: Hello.
rate_limits:
  - scope: tenant
    rate: 100
    period: minute
    burst: 50
"""


OK = "    config: {content: [{type: text, text: ok}]}\n"


def plan_of(tenant: Tenant, text: str) -> Plan:
    return configuration_plan(tenant=tenant, loaded=file_check(text)).plan


def test_a_plan_on_a_changed_file_lists_exactly_the_changes(tenant: Tenant) -> None:
    apply(tenant, BASE)
    changed = (
        BASE.replace("Search the docs.", "Search everything.")
        .replace(
            "  - name: fetch\n    description: Fetch a page.\n    config: {content: [{type: text, text: fetched}]}\n",
            "",
        )
        .replace("burst: 50", "burst: 80")
        .replace(
            "tools:\n", "settings:\n  instructions: Be brief.\ntools:\n  - name: summarize\n    enabled: false\n" + OK
        )
    )

    plan = plan_of(tenant, changed)

    assert plan.changes == (
        Change("settings", "", "change", (FieldChange("instructions", "Use the tools wisely.", "Be brief."),)),
        Change("tools", "fetch", "remove"),
        Change("tools", "search", "change", (FieldChange("description", "Search the docs.", "Search everything."),)),
        Change("tools", "summarize", "add"),
        Change("rate_limits", "tenant", "change", (FieldChange("burst", 50, 80),)),
    )
    assert plan.summary() == "1 to add, 3 to change, 0 to take over, 1 to remove."
    assert plan.lines() == [
        "Plan for tenant acme:",
        "  ~ settings",
        '      instructions: "Use the tools wisely." → "Be brief."',
        "  - tool fetch",
        "  ~ tool search",
        '      description: "Search the docs." → "Search everything."',
        "  + tool summarize",
        "  ~ rate limit tenant",
        "      burst: 50 → 80",
        "1 to add, 3 to change, 0 to take over, 1 to remove.",
    ]


def test_a_plan_changes_nothing(tenant: Tenant) -> None:
    plan_of(tenant, BASE)

    assert not Tool.objects.filter(tenant=tenant).exists()
    assert plan_of(tenant, BASE).count("add") == 4


def test_hand_made_objects_are_left_alone_and_the_files_own_are_removed(tenant: Tenant) -> None:
    ToolFactory(tenant=tenant, name="by_hand")
    quotas.rate_limit_create(tenant=tenant, scope="client", rate=10, period=60, burst=5)
    apply(tenant, BASE)

    apply(tenant, "version: 1\n")

    assert list(Tool.objects.filter(tenant=tenant).values_list("name", flat=True)) == ["by_hand"]
    assert not Resource.objects.filter(tenant=tenant).exists()
    assert [str(limit) for limit in tenant.rate_limits.all()] == ["Client (each client): default, 10 per minute"]


def test_a_hand_made_object_the_file_names_is_taken_over_and_then_managed(tenant: Tenant) -> None:
    content = {"content": [{"type": "text", "text": "found"}]}
    ToolFactory(tenant=tenant, name="search", description="Search the docs.", config=content, input_schema={})
    Tool.objects.filter(name="search").update(input_schema={"type": "object"})

    plan = plan_of(tenant, BASE)
    apply(tenant, BASE)

    assert Change("tools", "search", "adopt", (), "made by hand: the file manages it from now on") in plan.changes
    assert plan_of(tenant, "version: 1\n").changes[1] == Change("tools", "search", "remove")


def test_an_object_the_file_made_and_someone_deleted_is_made_again(tenant: Tenant) -> None:
    apply(tenant, BASE)
    Tool.objects.filter(tenant=tenant, name="fetch").delete()

    assert plan_of(tenant, BASE).changes == (Change("tools", "fetch", "add"),)


def test_a_rename_is_a_removal_and_an_addition(tenant: Tenant) -> None:
    apply(tenant, BASE)

    plan = plan_of(tenant, BASE.replace("name: fetch", "name: get_page"))

    assert plan.changes == (Change("tools", "fetch", "remove"), Change("tools", "get_page", "add"))


def test_values_equal_as_json_are_no_change_whatever_their_key_order(tenant: Tenant) -> None:
    apply(
        tenant,
        BASE.replace(
            "Search the docs.\n",
            "Search the docs.\n    input_schema: {type: object, properties: {q: {type: string}}}\n",
        ),
    )

    reordered = BASE.replace(
        "Search the docs.\n",
        "Search the docs.\n    input_schema:\n      properties: {q: {type: string}}\n      type: object\n",
    )
    assert plan_of(tenant, reordered).empty


def test_an_export_of_a_hand_made_tenant_takes_everything_over(tenant: Tenant) -> None:
    catalog_make(tenant)

    plan = plan_of(tenant, tenant_export(tenant))

    assert {change.action for change in plan.changes} == {"adopt"}
    assert plan.count("adopt") == 8


def test_names_held_by_a_sources_items_are_refused_on_their_line(tenant: Tenant) -> None:
    document = document_parse(PETSTORE.read_bytes(), location="https://pets.example/openapi.yaml")
    openapi_import(tenant=tenant, document=document, options=ImportOptions(prefix="pets_"), select=["GET /pets"])

    problems = problems_of(tenant, "version: 1\ntools:\n  - name: ok\n" + OK + "  - name: pets_listPets\n" + OK)

    assert problems == [
        "line 5 (tools[1].name): 'pets_listPets' is held by the tool imported from the OpenAPI source "
        "'Petstore 3.0': rename one of them"
    ]


def test_a_tool_the_file_both_makes_and_imports_is_refused(tenant: Tenant) -> None:
    text = (
        "version: 1\n"
        "tools:\n"
        "  - name: pets_listPets\n" + OK + "openapi_sources:\n"
        "  - location: https://pets.example/openapi.yaml\n"
        "    name: Pets\n"
        "    prefix: pets_\n"
        "    tools: [pets_listPets]\n"
    )

    assert problems_of(tenant, text) == [
        "line 3 (tools[0].name): the tool 'pets_listPets' is also imported by the OpenAPI source "
        "'https://pets.example/openapi.yaml' (line 6)"
    ]


def test_a_tool_an_openapi_source_would_import_over_a_hand_made_one_is_refused(tenant: Tenant) -> None:
    ToolFactory(tenant=tenant, name="pets_listPets")
    text = (
        "version: 1\n"
        "openapi_sources:\n"
        "  - location: https://pets.example/openapi.yaml\n"
        "    name: Pets\n"
        "    prefix: pets_\n"
        "    tools: [pets_listPets]\n"
    )

    assert problems_of(tenant, text) == [
        "line 6 (openapi_sources[0].tools): the tool 'pets_listPets' it imports is held by a tool made by hand "
        "(rename it, or list it in the file to manage it)"
    ]


def test_every_object_written_is_checked_as_the_admin_checks_it(tenant: Tenant) -> None:
    text = (
        "version: 1\n"
        "settings:\n"
        "  allowed_origins: [not-an-origin]\n"
        "tools:\n"
        "  - name: broken\n"
        "    input_schema: {type: nonsense}\n" + OK + ""
        "  - name: ungranted\n"
        "    backend: python\n"
        "    config: {function: demo.echo}\n"
        "resources:\n"
        "  - uri: docs://both\n"
        "    name: both\n"
        "    text: a\n"
        "    blob: YQ==\n"
        "upstreams:\n"
        "  - name: up\n"
        "    url: ftp://example.com/mcp\n"
        "    prefix: up_\n"
        "rate_limits:\n"
        "  - scope: tenant\n"
        "    tool_name: search\n"
        "    rate: 1\n"
        "    period: second\n"
        "    burst: 1\n"
    )

    assert problems_of(tenant, text) == [
        "line 3 (settings.allowed_origins): 'not-an-origin' is not an origin (scheme://host[:port]).",
        'line 6 (tools[0].input_schema): The input schema must have "type": "object" at its root.',
        "line 6 (tools[0].input_schema): The input schema is not a valid JSON Schema (at type): 'nonsense' is not "
        "valid under any of the given schemas",
        "line 10 (tools[1].config): Tenant 'acme' may not bind the Python function 'demo.echo': platform staff grant "
        "functions per tenant (Python function grants in the admin).",
        "line 12 (resources[0]): A resource has exactly one of text or blob.",
        "line 18 (upstreams[0].url): The URL must start with https:// (or http://).",
        "line 22 (rate_limits[0].tool_name): Only a tool limit names a tool.",
    ]


def test_a_secret_the_tenant_does_not_have_is_refused_wherever_it_is_named(tenant: Tenant) -> None:
    text = (
        "version: 1\n"
        "tools:\n"
        "  - name: call\n"
        "    backend: http\n"
        "    config: {method: GET, url: 'https://api.example/', auth: {type: bearer, secret: nope}}\n"
        "upstreams:\n"
        "  - name: up\n"
        "    url: https://up.example/mcp\n"
        "    prefix: up_\n"
        "    auth: {type: header, name: X-Key, secret: missing-too}\n"
        "openapi_sources:\n"
        "  - location: https://pets.example/openapi.yaml\n"
        "    name: Pets\n"
        "    secret_name: absent\n"
        "    tools: []\n"
    )

    problems = problems_of(tenant, text)

    advice = "add it under Secrets first (a file names secrets, it never holds their values)"
    assert problems == [
        f"line 5 (tools[0].config): there is no secret 'nope' in acme: {advice}",
        f"line 10 (upstreams[0].auth): there is no secret 'missing-too' in acme: {advice}",
        f"line 14 (openapi_sources[0].secret_name): there is no secret 'absent' in acme: {advice}",
    ]


def test_an_object_listed_twice_is_refused_with_both_lines(tenant: Tenant) -> None:
    text = "version: 1\ntools:\n  - name: a\n" + OK + "  - name: b\n" + OK + "  - name: a\n"

    assert problems_of(tenant, text) == ["line 7 (tools[2]): the tool 'a' is listed twice (first on line 3)"]


def test_an_openapi_document_is_read_again_only_from_a_url_here(tenant: Tenant, tmp_path: Path) -> None:
    text = "version: 1\nopenapi_sources:\n  - location: {where}\n    name: Pets\n    tools: []\n"
    local = tmp_path / "pets.yaml"
    local.write_text(PETSTORE.read_text())

    assert problems_of(tenant, text.format(where=json.dumps(str(local)))) == [
        f"line 3 (openapi_sources[0].location): {str(local)!r} is not an http(s) URL: the document cannot be read "
        "again here"
    ]
    allowed = configuration_plan(
        tenant=tenant, loaded=file_check(text.format(where=json.dumps(str(local)))), files_allowed=True
    )
    assert allowed.plan.changes[0].note == "imports the document from its location"
