"""Servers within a tenant: what a selection may say and which items it chooses, and the writes that store servers
(validated, announced as a change of the tenant)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from tenants import servers, services
from tenants.models import OpenApiSource, Tenant, Upstream
from tenants.selection import selection_entries, selection_errors, selection_parse, server_members
from tests.factories import TenantFactory, ToolFactory

pytestmark = pytest.mark.django_db


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        ("tools:search", "must be a list"),
        ([1], "must be a list"),
        (["search"], "does not start with one of"),
        (["widgets:search"], "does not start with one of"),
        (["tools:"], "names nothing"),
        (["upstream:github"], "a source is named by its id"),
        (["openapi:0"], "a source is named by its id"),
        (["tag:not a tag"], "a tag has 1 to 64"),
        (["tools:a", "tools:a"], "listed twice"),
    ],
)
def test_a_malformed_selection_is_refused_with_what_is_wrong(entries: Any, problem: str) -> None:
    assert any(problem in message for message in selection_errors(entries)), selection_errors(entries)
    with pytest.raises(ValueError, match=problem):
        selection_parse(entries)


def test_a_selection_chooses_by_key_by_source_and_by_tag() -> None:
    selection = selection_parse(
        ["tools:search", "resources:docs://a:b", "templates:pages://{p}", "upstream:7", "openapi:9", "tag:ro"]
    )
    assert selection.items["resources"] == {"docs://a:b"}, "a URI keeps its own colons"

    def tool(name: str, **kw: Any) -> bool:
        return selection.selects("tools", name, **{"upstream_id": None, "openapi_source_id": None, "tags": [], **kw})

    assert tool("search")
    assert not tool("delete")
    assert tool("delete", upstream_id=7) and not tool("delete", upstream_id=8)
    assert tool("delete", openapi_source_id=9)
    assert tool("delete", tags=["billing", "ro"]) and not tool("delete", tags=["billing"])
    assert selection.selects("templates", "pages://{p}", upstream_id=None, openapi_source_id=None, tags=[])


def test_the_editor_writes_entries_in_a_stable_order() -> None:
    assert selection_entries(tags=["b", "a"], tools=["z", "y", "z"], upstreams=[3]) == [
        "tools:y",
        "tools:z",
        "upstream:3",
        "tag:a",
        "tag:b",
    ]


def test_members_are_the_tenants_enabled_items_the_selection_chooses() -> None:
    acme = TenantFactory(slug="acme")
    other = TenantFactory(slug="other")
    source = OpenApiSource.objects.create(
        tenant=acme, name="pets", location="pets.json", document_sha256="0" * 64, imported_at="2026-01-01T00:00Z"
    )
    upstream = Upstream.objects.create(tenant=acme, name="gh", url="https://gh.example/mcp")
    ToolFactory(tenant=acme, name="search", tags=["ro"])
    ToolFactory(tenant=acme, name="off", tags=["ro"], enabled=False)
    ToolFactory(tenant=acme, name="pet_list", openapi_source=source)
    ToolFactory(tenant=acme, name="gh_issues", upstream=upstream)
    ToolFactory(tenant=acme, name="plain")
    ToolFactory(tenant=other, name="search", tags=["ro"])
    chosen = selection_parse(["tag:ro", f"openapi:{source.pk}", f"upstream:{upstream.pk}"])
    assert server_members(tenant=acme, selection=chosen, kind="tools") == {"search", "pet_list", "gh_issues"}
    by_name = selection_parse(["tools:plain", "tools:missing"])
    assert server_members(tenant=acme, selection=by_name, kind="tools") == {"plain"}
    assert server_members(tenant=acme, selection=selection_parse([]), kind="tools") == frozenset()


def test_item_tags_are_checked_where_items_are_saved() -> None:
    acme = TenantFactory(slug="acme")
    with pytest.raises(ValidationError) as refused:
        services.tool_create(tenant=acme, name="t", config=_text("x"), tags=["ok", "not ok"])
    assert any("'not ok' is not a tag" in m for m in refused.value.message_dict["tags"])
    with pytest.raises(ValidationError):
        services.prompt_create(tenant=acme, name="p", tags=["a", "a"])


def test_a_server_is_refused_a_reserved_or_taken_slug_and_sources_of_another_tenant() -> None:
    acme = TenantFactory(slug="acme")
    other = TenantFactory(slug="other")
    theirs = Upstream.objects.create(tenant=other, name="gh", url="https://gh.example/mcp")
    for slug in ("mcp", "sse", "messages", "Not A Slug"):
        with pytest.raises(ValidationError) as refused:
            servers.server_create(tenant=acme, slug=slug)
        assert "slug" in refused.value.message_dict, slug
    servers.server_create(tenant=acme, slug="reader")
    with pytest.raises(ValidationError):
        servers.server_create(tenant=acme, slug="reader")
    with pytest.raises(ValidationError) as refused:
        servers.server_create(tenant=acme, slug="mirror", selection=[f"upstream:{theirs.pk}", "openapi:12345"])
    assert refused.value.message_dict["selection"] == [
        f"upstream:{theirs.pk} is no source of this tenant.",
        "openapi:12345 is no source of this tenant.",
    ]
    assert servers.server_create(tenant=other, slug="reader").tenant == other, "slugs are per tenant"


def test_every_write_to_a_server_is_a_new_revision_of_its_tenant() -> None:
    acme = TenantFactory(slug="acme")

    def revision() -> int:
        return Tenant.objects.get(pk=acme.pk).revision

    before = revision()
    server = servers.server_create(tenant=acme, slug="reader")
    created = revision()
    servers.server_update(server=server, data={"selection": ["tools:a"]})
    updated = revision()
    servers.server_update(server=server, data={"selection": ["tools:a"]})
    assert revision() == updated, "an update that changes nothing is no change"
    servers.server_delete(server=server)
    assert before < created < updated < revision()


def test_an_update_that_fails_leaves_the_server_as_it_was() -> None:
    server = servers.server_create(tenant=TenantFactory(slug="acme"), slug="reader", selection=["tools:a"])
    with pytest.raises(ValidationError):
        servers.server_update(server=server, data={"selection": ["bad"], "title": "New"})
    assert (server.selection, server.title) == (["tools:a"], "")
    with pytest.raises(ValidationError):
        servers.server_update(server=server, data={"tenant": None})
