"""A tenant's named servers in the admin, as a tenant's admin: the selection editor offers the tenant's catalog and
stores what was ticked, keeps entries the catalog lacks, previews what the server serves, and the tenant page and the
server's page show its URL and client configuration; tags are typed on each item's page."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tenants import servers, services
from tenants.models import Membership, Server, Tenant, Tool, Upstream
from tests.factories import MembershipFactory, PromptFactory, ResourceFactory, ToolFactory, UserFactory
from tests.tenants.admin.page_forms import form_posted, with_values

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(tenant: Tenant, other_tenant: Tenant) -> dict[str, Any]:
    ToolFactory(tenant=tenant, name="search", tags=["read-only"])
    ToolFactory(tenant=tenant, name="delete_all")
    ResourceFactory(tenant=tenant, uri="docs://readme", name="readme")
    PromptFactory(tenant=tenant, name="triage", tags=["read-only"])
    ToolFactory(tenant=other_tenant, name="globex_tool", tags=["globex-tag"])
    upstream = Upstream.objects.create(tenant=tenant, name="github", url="https://gh.example/mcp", enabled=False)
    return {"upstream": upstream}


@pytest.fixture
def admin(client: Client, tenant: Tenant) -> Client:
    user = UserFactory(username="ada")
    MembershipFactory(tenant=tenant, user=user, role=Membership.Role.ADMIN)
    client.force_login(user)
    return client


def choices(page: Any, field: str) -> list[tuple[str, str]]:
    return [(str(value), str(label)) for value, label in page.context["adminform"].form.fields[field].choices]


def test_the_editor_offers_the_tenants_catalog_and_stores_what_is_ticked(
    admin: Client, tenant: Tenant, catalog: dict[str, Any]
) -> None:
    add = admin.get(reverse("admin:tenants_server_add"))
    assert choices(add, "tools") == [("delete_all", "delete_all"), ("search", "search")]
    assert choices(add, "upstreams") == [(str(catalog["upstream"].pk), "github")]
    assert choices(add, "tags") == [("read-only", "read-only")]
    assert "globex" not in add.content.decode()
    assert "URL /t/&lt;tenant&gt;/s/&lt;slug&gt;/mcp." in add.content.decode(), "the slug's help text, escaped"
    posted = with_values(
        form_posted(add.content.decode(), "server_form"),
        slug="reader",
        title="Reader",
        tools=["delete_all"],
        resources=["docs://readme"],
        tags=["read-only"],
        upstreams=[str(catalog["upstream"].pk)],
    )
    saved = admin.post(reverse("admin:tenants_server_add"), posted)
    assert saved.status_code == 302, saved.context["adminform"].form.errors if saved.context else saved
    server = Server.objects.get(tenant=tenant, slug="reader")
    assert server.selection == [
        "tools:delete_all",
        "resources:docs://readme",
        f"upstream:{catalog['upstream'].pk}",
        "tag:read-only",
    ]
    page = admin.get(reverse("admin:tenants_server_change", args=[server.pk]))
    html = page.content.decode()
    assert "Tools (2)</dt><dd>delete_all, search</dd>" in html, "the preview: by name and by tag"
    assert "Prompts (1)</dt><dd>triage</dd>" in html
    assert page.context["server_connect"].endpoint_url == "http://testserver/t/acme/s/reader/mcp"
    assert "claude mcp add --transport http acme-reader http://testserver/t/acme/s/reader/mcp" in html


def test_an_entry_the_catalog_lacks_is_kept_and_marked(admin: Client, tenant: Tenant, catalog: dict[str, Any]) -> None:
    server = servers.server_create(tenant=tenant, slug="reader", selection=["tools:renamed_tool", "tools:search"])
    page = admin.get(reverse("admin:tenants_server_change", args=[server.pk]))
    assert ("renamed_tool", "renamed_tool (not in the catalog now)") in choices(page, "tools")
    posted = with_values(form_posted(page.content.decode(), "server_form"), title="Kept")
    assert admin.post(reverse("admin:tenants_server_change", args=[server.pk]), posted).status_code == 302
    server.refresh_from_db()
    assert (server.title, server.selection) == ("Kept", ["tools:renamed_tool", "tools:search"])
    untick = with_values(posted, tools=["search"])
    assert admin.post(reverse("admin:tenants_server_change", args=[server.pk]), untick).status_code == 302
    server.refresh_from_db()
    assert server.selection == ["tools:search"]


def test_a_refused_server_says_why_on_the_page(admin: Client, tenant: Tenant, catalog: dict[str, Any]) -> None:
    add = admin.get(reverse("admin:tenants_server_add"))
    posted = with_values(form_posted(add.content.decode(), "server_form"), slug="mcp")
    refused = admin.post(reverse("admin:tenants_server_add"), posted)
    assert refused.status_code == 200
    assert "names an endpoint; choose another name" in refused.content.decode()
    assert not Server.objects.exists()


def test_the_tenant_page_lists_each_server_with_its_url_and_configuration(
    admin: Client, tenant: Tenant, catalog: dict[str, Any]
) -> None:
    servers.server_create(tenant=tenant, slug="reader", title="Reader")
    servers.server_create(tenant=tenant, slug="writer", enabled=False)
    page = admin.get(reverse("admin:tenants_tenant_change", args=[tenant.pk]))
    listed = {server.slug: server for server in page.context["servers"]}
    assert list(listed) == ["reader", "writer"]
    assert listed["reader"].endpoint_url == "http://testserver/t/acme/s/reader/mcp"
    assert listed["reader"].legacy_endpoint_url == "http://testserver/t/acme/s/reader/sse"
    keys = [snippet.key for snippet in listed["reader"].snippets]
    assert keys[0] == "server-reader-claude-code" and len(set(keys)) == len(keys)
    html = page.content.decode()
    assert 'id="snippet-server-reader-cursor"' in html and 'id="snippet-cursor"' in html
    assert '"acme-reader"' in listed["reader"].snippets[1].text
    assert "disabled" in html and f"/admin/tenants/server/add/?tenant={tenant.pk}" in html


def test_a_protected_tenants_server_snippets_get_a_token_for_that_server(admin: Client) -> None:
    vault = services.tenant_create(slug="vault", name="Vault", requires_authorization=True)
    MembershipFactory(tenant=vault, user=UserFactory(username="ada"), role=Membership.Role.ADMIN)
    server = servers.server_create(tenant=vault, slug="reader")
    page = admin.get(reverse("admin:tenants_server_change", args=[server.pk]))
    token = {s.key: s.text for s in page.context["server_connect"].snippets}["server-reader-token"]
    assert "resource=http://testserver/t/vault/s/reader/mcp" in token


def test_tags_are_typed_as_words_on_an_items_page(admin: Client, tenant: Tenant, catalog: dict[str, Any]) -> None:
    tool = Tool.objects.get(tenant=tenant, name="delete_all")
    page = admin.get(reverse("admin:tenants_tool_change", args=[tool.pk]))
    posted = with_values(form_posted(page.content.decode(), "tool_form"), tags="danger, billing danger")
    saved = admin.post(reverse("admin:tenants_tool_change", args=[tool.pk]), posted)
    assert saved.status_code == 302, saved.context["adminform"].form.errors if saved.context else saved
    tool.refresh_from_db()
    assert tool.tags == ["danger", "billing"]
    shown = admin.get(reverse("admin:tenants_tool_change", args=[tool.pk]))
    assert 'value="danger, billing"' in shown.content.decode()
    bad = with_values(posted, tags="not/a/tag")
    refused = admin.post(reverse("admin:tenants_tool_change", args=[tool.pk]), bad)
    assert "is not a tag" in refused.content.decode()


def test_a_servers_page_has_its_history_and_a_change_there_is_restored(
    admin: Client, tenant: Tenant, catalog: dict[str, Any]
) -> None:
    add = admin.get(reverse("admin:tenants_server_add"))
    posted = with_values(
        form_posted(add.content.decode(), "server_form"), slug="reader", title="Reader", tools=["search"]
    )
    assert admin.post(reverse("admin:tenants_server_add"), posted).status_code == 302
    server = Server.objects.get(tenant=tenant, slug="reader")
    page = admin.get(reverse("admin:tenants_server_change", args=[server.pk]))
    history_url = reverse("admin:tenants_server_history", args=[server.pk])
    assert f'href="{history_url}"' in page.content.decode(), "the History button"
    edited = with_values(form_posted(page.content.decode(), "server_form"), title="Everything", tools=["delete_all"])
    assert admin.post(reverse("admin:tenants_server_change", args=[server.pk]), edited).status_code == 302

    versions = admin.get(history_url).context["versions"]

    assert [(v["number"], v["who"], v["changed"]) for v in versions] == [
        (2, "ada", "Title, Selection"),
        (1, "ada", "Created"),
    ]
    assert versions[0]["comment"] == "Changed server reader: selection, title"
    version_page = admin.get(versions[1]["url"])
    assert {diff.name for diff in version_page.context["changed"]} == {"title", "selection"}
    restored = admin.post(versions[1]["url"])
    assert restored.status_code == 302 and restored["Location"] == history_url
    server.refresh_from_db()
    assert (server.title, server.selection) == ("Reader", ["tools:search"])
    assert admin.get(history_url).context["versions"][0]["who"] == "ada"
