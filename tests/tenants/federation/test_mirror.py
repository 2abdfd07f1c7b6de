"""Mirroring an upstream's listing into the catalog: prefixed names, admin overrides kept across refreshes,
exclusions, vanished items removed, and an item that cannot be stored skipped, saying why, with the rest mirrored."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync

from mcp_core.caching import CacheHints
from tenants import services
from tenants.catalog import TenantCatalog
from tenants.federation.mirror import Listing, local_name, mirror_apply
from tenants.models import Backend, Prompt, Resource, ResourceTemplate, Tenant, Tool, Upstream

pytestmark = pytest.mark.django_db

TOOLS_CHANGED = {"type": "catalog.changed", "kind": "tools"}


def tool(name: str, description: str = "", **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object"}, **extra}


def listing(**overrides: Any) -> Listing:
    base = Listing(
        tools=[tool("echo", "Say it back."), tool("weather", "The weather.", outputSchema={"type": "object"})],
        resources=[{"uri": "notes://readme", "name": "readme", "description": "Read me", "mimeType": "text/plain"}],
        resource_templates=[{"name": "topic", "uriTemplate": "notes://topics/{topic}", "description": "A topic"}],
        prompts=[{"name": "greet", "description": "Greet", "arguments": [{"name": "who", "required": True, "x": 1}]}],
    )
    for key, value in overrides.items():
        setattr(base, key, value)
    return base


@pytest.fixture
def upstream(tenant: Tenant) -> Upstream:
    return Upstream.objects.create(tenant=tenant, name="up", url="https://up.example/mcp", prefix="up_")


def test_items_are_mirrored_under_the_prefix_with_the_upstreams_definitions(upstream: Upstream) -> None:
    report = mirror_apply(upstream=upstream, listing=listing())

    assert (report.created, report.updated, report.removed) == (5, 0, 0)
    echo = Tool.objects.get(name="up_echo")
    assert echo.backend == Backend.UPSTREAM and echo.upstream == upstream and echo.description == "Say it back."
    assert echo.config["remote"]["name"] == "echo"
    assert Tool.objects.get(name="up_weather").output_schema == {"type": "object"}
    assert Resource.objects.get(uri="notes://readme").upstream == upstream
    template = ResourceTemplate.objects.get(name="up_topic")
    assert template.uri_template == "notes://topics/{topic}" and template.backend == Backend.UPSTREAM
    # Only the argument keys a prompt may have are kept.
    assert Prompt.objects.get(name="up_greet").arguments == [{"name": "who", "required": True}]
    upstream.refresh_from_db()
    assert upstream.last_refreshed_at is not None


def test_mirroring_publishes_a_list_change(
    upstream: Upstream, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    listener = listen(upstream.tenant)
    with django_capture_on_commit_callbacks(execute=True):
        mirror_apply(upstream=upstream, listing=listing())
    assert listener.receive() == TOOLS_CHANGED


def test_admin_overrides_survive_a_refresh_and_upstream_changes_reach_the_rest(upstream: Upstream) -> None:
    mirror_apply(upstream=upstream, listing=listing())
    services.tool_update(tool=Tool.objects.get(name="up_echo"), data={"enabled": False})
    services.tool_update(tool=Tool.objects.get(name="up_weather"), data={"name": "forecast", "description": "Ours."})
    services.prompt_update(prompt=Prompt.objects.get(name="up_greet"), data={"title": "Hello"})

    changed = listing(
        tools=[
            tool("echo", "Say it back, louder."),
            tool("weather", "The weather, now hourly.", inputSchema={"type": "object", "required": ["city"]}),
        ]
    )
    mirror_apply(upstream=upstream, listing=changed)

    echo = Tool.objects.get(config__remote__name="echo", upstream=upstream)
    assert echo.enabled is False and echo.description == "Say it back, louder."
    forecast = Tool.objects.get(config__remote__name="weather", upstream=upstream)
    assert forecast.name == "forecast" and forecast.description == "Ours."
    assert forecast.input_schema == {"type": "object", "required": ["city"]}
    assert Prompt.objects.get(name="up_greet").title == "Hello"


def test_vanished_and_excluded_items_are_removed(upstream: Upstream) -> None:
    mirror_apply(upstream=upstream, listing=listing())
    upstream.excluded = ["prompts:greet", "resources:notes://readme"]
    upstream.save()

    report = mirror_apply(upstream=upstream, listing=listing(tools=[tool("echo", "Say it back.")]))

    assert report.removed == 3
    assert list(Tool.objects.values_list("name", flat=True)) == ["up_echo"]
    assert not Prompt.objects.exists() and not Resource.objects.exists()


def test_a_name_taken_by_a_local_tool_is_skipped_naming_the_item_and_the_rest_is_mirrored(
    upstream: Upstream, tenant: Tenant
) -> None:
    services.tool_create(tenant=tenant, name="up_weather", config={"content": []})

    report = mirror_apply(upstream=upstream, listing=listing())

    assert len(report.skipped) == 1 and "tool 'weather' cannot be added" in report.skipped[0]
    assert "1 skipped (The upstream's tool 'weather' cannot be added: " in str(report)
    assert sorted(Tool.objects.values_list("name", flat=True)) == ["up_echo", "up_weather"]
    assert Tool.objects.get(name="up_weather").upstream is None
    assert Prompt.objects.filter(name="up_greet").exists()


def test_a_resource_whose_uri_does_not_parse_is_skipped(upstream: Upstream) -> None:
    odd = {"uri": "x://[x]", "name": "odd"}

    report = mirror_apply(upstream=upstream, listing=listing(resources=[*listing().resources, odd]))

    assert report.created == 5 and len(report.skipped) == 1 and "resource 'x://[x]'" in report.skipped[0]
    assert list(Resource.objects.values_list("uri", flat=True)) == ["notes://readme"]


def test_the_tenants_lists_carry_the_narrowest_list_hints_of_its_upstreams_and_a_new_hint_is_a_new_revision(
    upstream: Upstream, tenant: Tenant
) -> None:
    other = Upstream.objects.create(tenant=tenant, name="other", url="https://other.example/mcp", prefix="o_")
    public = {"ttlMs": 30_000, "cacheScope": "public"}
    mirror_apply(upstream=upstream, listing=listing(cache_hints={"tools": public, "prompts": public}))
    stale = {"ttlMs": 0, "cacheScope": "private"}
    mirror_apply(upstream=other, listing=listing(tools=[], resources=[], cache_hints={"tools": {**public, "ttlMs": 5}}))
    upstream.refresh_from_db()
    assert upstream.list_cache_hints == {"tools": public, "prompts": public}
    catalog = TenantCatalog(Tenant.objects.get(pk=tenant.pk))

    def hints(list_name: str) -> CacheHints | None:
        page = async_to_sync(getattr(catalog, f"list_{list_name}"))(after=None, limit=10)
        return page.cache

    assert hints("tools") == CacheHints(ttl_ms=5, scope="public")
    assert hints("prompts") == CacheHints(ttl_ms=30_000, scope="public")
    # Neither upstream gave its resource lists hints (a handshake-era upstream gives none): nothing is imposed.
    assert hints("resources") is None and hints("resource_templates") is None

    revision = Tenant.objects.get(pk=tenant.pk).revision
    mirror_apply(upstream=upstream, listing=listing(cache_hints={"tools": stale, "prompts": public}))
    assert Tenant.objects.get(pk=tenant.pk).revision > revision
    assert hints("tools") == CacheHints(ttl_ms=0, scope="private")


def test_upstream_names_are_made_to_fit_the_catalogs_alphabet() -> None:
    assert local_name("gh_", "issues/list all") == "gh_issues_list_all"
    assert len(local_name("p_", "x" * 300)) == 128
