"""Servers in a configuration file: planned field by field like any object, written through the servers' services
with their sources named by name (ids are the tenant's own), refused on the line that names a source, item or server
the tenant will not have; their rate limits by slug; change policies of sources."""

from __future__ import annotations

import pytest

from mcp_platform.catalog_files.exporting import tenant_export
from mcp_platform.catalog_files.loading import ConfigFileError, config_load
from mcp_platform.catalog_files.planning import Change, FieldChange, configuration_plan, file_check
from mcp_platform.catalog_files.selections import openapi_labels, openapi_source_named
from mcp_platform.quotas.models import RateLimit
from tenants.models import ChangePolicy, Server, Tenant, Upstream
from tenants.servers import server_create
from tests.catalog_files.conftest import apply, database_snapshot, problems_of
from tests.e2e.upstreams import UpstreamServer

pytestmark = pytest.mark.django_db

OK = "    config: {content: [{type: text, text: ok}]}\n"
FILE = (
    "version: 1\n"
    "tools:\n"
    "  - name: search\n"
    "    tags: [read-only]\n" + OK + "  - name: fetch\n" + OK + "upstreams:\n"
    "  - name: github\n"
    "    url: https://gh.example/mcp\n"
    "    prefix: gh_\n"
    "    enabled: false\n"
    "servers:\n"
    "  - slug: reader\n"
    "    title: Reader\n"
    "    selection:\n"
    "      tools: [search]\n"
    "      upstreams: [github]\n"
    "      tags: [read-only]\n"
    "  - slug: writer\n"
    "    selection: {tools: [fetch]}\n"
)


def test_servers_are_written_with_their_sources_by_id_and_read_back_by_name(tenant: Tenant) -> None:
    apply(tenant, FILE)

    github = Upstream.objects.get(tenant=tenant, name="github")
    reader = Server.objects.get(tenant=tenant, slug="reader")
    assert (reader.title, reader.selection) == ("Reader", ["tools:search", f"upstream:{github.pk}", "tag:read-only"])
    assert Server.objects.get(tenant=tenant, slug="writer").selection == ["tools:fetch"]
    exported = config_load(tenant_export(tenant)).data["servers"]
    assert exported[0]["selection"] == {"tools": ["search"], "upstreams": ["github"], "tags": ["read-only"]}
    assert configuration_plan(tenant=tenant, loaded=file_check(FILE)).plan.empty


def test_a_plan_on_a_changed_server_lists_exactly_its_change(tenant: Tenant) -> None:
    apply(tenant, FILE)
    changed = FILE.replace("title: Reader", "title: Readers").replace("tools: [search]", "tools: [search, fetch]")

    plan = configuration_plan(tenant=tenant, loaded=file_check(changed)).plan

    before = {"tools": ["search"], "upstreams": ["github"], "tags": ["read-only"]}
    assert plan.changes == (
        Change(
            "servers",
            "reader",
            "change",
            (
                FieldChange("title", "Reader", "Readers"),
                FieldChange("selection", before, {**before, "tools": ["fetch", "search"]}),
            ),
        ),
    )
    assert plan.lines()[1:3] == ["  ~ server reader", '      title: "Reader" → "Readers"']
    apply(tenant, changed)
    github = Upstream.objects.get(tenant=tenant, name="github")
    assert Server.objects.get(tenant=tenant, slug="reader").selection == [
        "tools:fetch",
        "tools:search",
        f"upstream:{github.pk}",
        "tag:read-only",
    ]


def test_a_server_naming_an_unknown_source_or_item_is_refused_with_its_line(tenant: Tenant) -> None:
    text = FILE.replace("tools: [search]", "tools: [search, serch]").replace(
        "      upstreams: [github]\n",
        "      upstreams: [github, gitlab]\n      openapi_sources: [Pet store]\n      resources: ['docs://none']\n",
    )
    snapshot = database_snapshot()

    assert problems_of(tenant, text) == [
        "line 17 (servers[0].selection.tools[1]): there is no tool 'serch' in the file or the tenant (nor from its "
        "sources)",
        "line 18 (servers[0].selection.upstreams[1]): there is no upstream 'gitlab' in the file or the tenant",
        "line 19 (servers[0].selection.openapi_sources[0]): there is no OpenAPI source 'Pet store' (by name or "
        "location) in the file or the tenant",
        "line 20 (servers[0].selection.resources[0]): there is no resource 'docs://none' in the file or the tenant "
        "(nor from its sources)",
    ]
    with pytest.raises(ConfigFileError):
        apply(tenant, text)
    assert database_snapshot() == snapshot


def test_a_source_the_file_removes_cannot_be_named_and_a_hand_made_one_can(tenant: Tenant) -> None:
    apply(tenant, FILE)
    Upstream.objects.create(tenant=tenant, name="gitlab", url="https://gl.example/mcp", enabled=False)
    without_github = FILE.replace(
        "upstreams:\n  - name: github\n    url: https://gh.example/mcp\n    prefix: gh_\n    enabled: false\n", ""
    ).replace("upstreams: [github]", "upstreams: [gitlab]")
    assert problems_of(tenant, without_github.replace("[gitlab]", "[github]")) == [
        "line 13 (servers[0].selection.upstreams[0]): there is no upstream 'github' in the file or the tenant"
    ]

    apply(tenant, without_github)

    gitlab = Upstream.objects.get(tenant=tenant, name="gitlab")
    assert not Upstream.objects.filter(tenant=tenant, name="github").exists()
    assert f"upstream:{gitlab.pk}" in Server.objects.get(tenant=tenant, slug="reader").selection


def test_a_server_the_file_stops_listing_is_removed_and_a_hand_made_one_stays(tenant: Tenant) -> None:
    apply(tenant, FILE)
    server_create(tenant=tenant, slug="adhoc", selection=["tools:gone"])

    apply(tenant, FILE.split("  - slug: writer\n")[0])

    assert sorted(Server.objects.filter(tenant=tenant).values_list("slug", flat=True)) == ["adhoc", "reader"]
    adhoc = [s for s in config_load(tenant_export(tenant)).data["servers"] if s["slug"] == "adhoc"]
    assert adhoc == [{"slug": "adhoc"}], "an entry naming nothing of the tenant is left out of the file"


def test_a_server_rate_limit_names_its_server_by_slug(tenant: Tenant) -> None:
    limit = "rate_limits:\n  - scope: server\n    server: reader\n    rate: 10\n    period: minute\n    burst: 5\n"

    apply(tenant, FILE + limit)

    stored = RateLimit.objects.get(tenant=tenant)
    assert (stored.scope, stored.server, stored.rate) == ("server", Server.objects.get(slug="reader"), 10)
    assert configuration_plan(tenant=tenant, loaded=file_check(FILE + limit)).plan.empty
    assert problems_of(tenant, FILE + limit.replace("server: reader", "server: ghost")) == [
        "line 24 (rate_limits[0].server): there is no server 'ghost' in the file or the tenant"
    ]
    assert problems_of(tenant, FILE + limit.replace("    server: reader\n", "")) == [
        "line 23 (rate_limits[0].server): Name the server (its slug) whose requests this limit counts."
    ]


def test_an_upstreams_change_policy_is_planned_and_applied(tenant: Tenant) -> None:
    apply(tenant, FILE)
    holding = FILE.replace("    enabled: false\n", "    enabled: false\n    change_policy: hold\n")

    plan = configuration_plan(tenant=tenant, loaded=file_check(holding)).plan
    apply(tenant, holding)

    assert [str(f) for change in plan.changes for f in change.fields] == ['change_policy: "accept" → "hold"']
    assert Upstream.objects.get(tenant=tenant, name="github").change_policy == ChangePolicy.HOLD


def test_items_a_new_upstream_would_bring_are_looked_for_once_it_is_mirrored(
    tenant: Tenant, upstream: UpstreamServer
) -> None:
    adding = (
        "version: 1\nupstreams:\n  - name: notes\n"
        f"    url: {upstream.url}\n    prefix: notes_\n"
        "servers:\n  - slug: notes\n    selection:\n      tools: [notes_echo, notes_nothing]\n"
    )
    plan = configuration_plan(tenant=tenant, loaded=file_check(adding)).plan
    assert [change.title for change in plan.changes][-1] == "+ server notes", "not known before the upstream is read"
    snapshot = database_snapshot()

    with pytest.raises(ConfigFileError) as refused:
        apply(tenant, adding)

    assert [str(p) for p in refused.value.problems] == [
        "line 9 (servers[0].selection.tools[1]): there is no tool 'notes_nothing' in the file or the tenant (nor "
        "from its sources)"
    ]
    assert database_snapshot() == snapshot
    apply(tenant, adding.replace(", notes_nothing", ""))
    assert Server.objects.get(tenant=tenant, slug="notes").selection == ["tools:notes_echo"]


def test_an_openapi_source_is_named_by_name_or_where_two_share_it_by_location() -> None:
    sources = [("https://a.example/openapi.yaml", "Pets"), ("https://b.example/openapi.yaml", "Pets"), ("c", "Shop")]

    assert openapi_labels(sources) == {
        "https://a.example/openapi.yaml": "https://a.example/openapi.yaml",
        "https://b.example/openapi.yaml": "https://b.example/openapi.yaml",
        "c": "Shop",
    }
    assert openapi_source_named(sources, "Shop") == "c"
    assert openapi_source_named(sources, "https://b.example/openapi.yaml") == "https://b.example/openapi.yaml"
    assert openapi_source_named(sources, "Pets") is None
