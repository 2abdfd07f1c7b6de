"""Selectors page by natural key in one query per page and never reach into another tenant."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync

from tenants import selectors
from tenants.models import Tenant
from tests.factories import PromptFactory, ResourceFactory, ResourceTemplateFactory, TenantFactory, ToolFactory

pytestmark = pytest.mark.django_db


def test_tool_list_pages_by_name_with_one_query_per_page(tenant: Tenant, django_assert_num_queries: Any) -> None:
    for name in ["delta", "alpha", "echo", "charlie", "bravo", "foxtrot", "golf"]:
        ToolFactory(tenant=tenant, name=name)
    ToolFactory(tenant=tenant, name="disabled", enabled=False)

    pages = []
    after = None
    while True:
        with django_assert_num_queries(1):
            page = selectors.tool_list(tenant=tenant, after=after, limit=3)
        pages.append([t.name for t in page.items])
        if not page.has_more:
            break
        after = page.items[-1].name

    assert pages == [["alpha", "bravo", "charlie"], ["delta", "echo", "foxtrot"], ["golf"]]


def test_exactly_full_last_page_says_nothing_more(tenant: Tenant) -> None:
    for name in ["a", "b", "c"]:
        ToolFactory(tenant=tenant, name=name)

    page = selectors.tool_list(tenant=tenant, after=None, limit=3)

    assert [t.name for t in page.items] == ["a", "b", "c"]
    assert page.has_more is False


def test_async_lists_also_take_one_query(tenant: Tenant, django_assert_num_queries: Any) -> None:
    ToolFactory.create_batch(5, tenant=tenant)
    ResourceFactory.create_batch(5, tenant=tenant)
    ResourceTemplateFactory.create_batch(5, tenant=tenant)
    PromptFactory.create_batch(5, tenant=tenant)

    for select in (
        selectors.atool_list,
        selectors.aresource_list,
        selectors.aresource_template_list,
        selectors.aprompt_list,
    ):
        with django_assert_num_queries(1):
            page = async_to_sync(select)(tenant=tenant, after=None, limit=2)
        assert len(page.items) == 2
        assert page.has_more is True


def test_resource_list_orders_by_uri_and_leaves_contents_unloaded(tenant: Tenant) -> None:
    ResourceFactory(tenant=tenant, uri="docs://b")
    ResourceFactory(tenant=tenant, uri="docs://a")

    page = selectors.resource_list(tenant=tenant, after="docs://a", limit=10)

    assert [r.uri for r in page.items] == ["docs://b"]
    assert page.items[0].get_deferred_fields() == {"text", "blob"}


def test_lists_never_show_another_tenants_entries(tenant: Tenant, other_tenant: Tenant) -> None:
    ToolFactory(tenant=other_tenant, name="theirs")
    ResourceFactory(tenant=other_tenant, uri="docs://theirs")
    PromptFactory(tenant=other_tenant, name="theirs")

    assert selectors.tool_list(tenant=tenant, after=None, limit=10).items == []
    assert selectors.resource_list(tenant=tenant, after=None, limit=10).items == []
    assert selectors.prompt_list(tenant=tenant, after=None, limit=10).items == []
    assert selectors.tool_get(tenant=tenant, name="theirs") is None
    assert selectors.resource_get(tenant=tenant, uri="docs://theirs") is None
    assert selectors.prompt_get(tenant=tenant, name="theirs") is None


def test_disabled_tool_cannot_be_fetched(tenant: Tenant) -> None:
    ToolFactory(tenant=tenant, name="off", enabled=False)

    assert selectors.tool_get(tenant=tenant, name="off") is None


def test_the_scope_vocabulary_comes_from_enabled_tools_of_the_tenant_asked(
    tenant: Tenant, other_tenant: Tenant
) -> None:
    ToolFactory(tenant=tenant, name="pay", required_scopes="billing:write  billing:read")
    ToolFactory(tenant=tenant, name="off", required_scopes="admin:all", enabled=False)
    ToolFactory(tenant=tenant, name="open")
    ToolFactory(tenant=other_tenant, name="pay", required_scopes="hr:read")

    assert selectors.tool_scope_vocabulary(tenant=tenant) == {"billing:write", "billing:read"}
    assert selectors.tool_scope_vocabulary(tenant=None) == {"billing:write", "billing:read", "hr:read"}


def test_only_active_tenants_are_servable() -> None:
    TenantFactory(slug="live")
    TenantFactory(slug="paused", status=Tenant.Status.SUSPENDED)

    assert selectors.tenant_get_servable(slug="live") is not None
    assert selectors.tenant_get_servable(slug="paused") is None
    assert selectors.tenant_get_servable(slug="missing") is None
    assert async_to_sync(selectors.atenant_get_servable)(slug="live") is not None


def test_templates_are_matched_in_name_order(tenant: Tenant) -> None:
    ResourceTemplateFactory(tenant=tenant, name="zeta")
    ResourceTemplateFactory(tenant=tenant, name="alpha")

    assert [t.name for t in selectors.resource_templates_all(tenant=tenant)] == ["alpha", "zeta"]


def test_limit_below_one_is_a_programming_error(tenant: Tenant) -> None:
    with pytest.raises(ValueError, match="limit must be at least 1"):
        selectors.tool_list(tenant=tenant, after=None, limit=0)


def test_tools_a_caller_may_not_use_are_skipped_without_shortening_pages(tenant: Tenant) -> None:
    for name in ["a", "b", "c", "d", "e", "f"]:
        ToolFactory(tenant=tenant, name=name, required_scopes="billing:write" if name in "bcd" else "")

    def pages(granted: frozenset[str] | None) -> list[list[str]]:
        found, after = [], None
        while True:
            page = async_to_sync(selectors.atool_list)(tenant=tenant, after=after, limit=2, granted=granted)
            found.append([t.name for t in page.items])
            if not page.has_more:
                return found
            after = page.items[-1].name

    assert pages(frozenset({"mcp:tools"})) == [["a", "e"], ["f"]]
    assert pages(frozenset({"mcp:tools", "billing:write"})) == [["a", "b"], ["c", "d"], ["e", "f"]]
    assert pages(None) == [["a", "b"], ["c", "d"], ["e", "f"]]
