"""The tenant's admin page: its endpoint URL, configuration to copy for clients and SDKs, its catalog at a glance."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tenants.models import Tenant
from tests.factories import MembershipFactory, PromptFactory, TenantFactory, ToolFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_the_tenant_page_shows_how_to_connect_and_what_it_offers(client: Client, tenant: Tenant) -> None:
    other = TenantFactory(slug="globex")
    ToolFactory(tenant=tenant, name="lookup_order")
    ToolFactory(tenant=tenant, name="refund_order")
    ToolFactory(tenant=other, name="globex_invoice")
    PromptFactory(tenant=tenant, name="triage")
    owner = UserFactory(username="olivia")
    MembershipFactory(tenant=tenant, user=owner, role="owner")
    client.force_login(owner)

    response = client.get(reverse("admin:tenants_tenant_change", args=[tenant.pk]))
    page = response.content.decode()
    glance = {kind.label: (kind.count, kind.names) for kind in response.context["catalog"]}

    assert response.context["endpoint_url"] == "http://testserver/t/acme/mcp"
    assert "claude mcp add --transport http acme http://testserver/t/acme/mcp" in page
    assert "&quot;mcpServers&quot;" in page and "StreamableHTTPClientTransport" in page
    assert glance["Tools"] == (2, ["lookup_order", "refund_order"])
    assert glance["Prompts"] == (1, ["triage"])
    assert glance["Resources"] == (0, [])
    assert "globex_invoice" not in page
    assert f"/admin/tenants/tool/?tenant__id__exact={tenant.pk}" in page


def test_the_endpoint_follows_the_public_base_url(admin_client: Any, tenant: Tenant, settings: Any) -> None:
    settings.MCP_PLATFORM = {**getattr(settings, "MCP_PLATFORM", {}), "PUBLIC_BASE_URL": "https://mcp.example.com"}

    response = admin_client.get(reverse("admin:tenants_tenant_change", args=[tenant.pk]))

    assert response.context["endpoint_url"] == "https://mcp.example.com/t/acme/mcp"


def test_a_public_tenants_snippets_send_no_token(admin_client: Any, tenant: Tenant) -> None:
    response = admin_client.get(reverse("admin:tenants_tenant_change", args=[tenant.pk]))
    snippets = {snippet.key: snippet.text for snippet in response.context["snippets"]}

    assert list(snippets) == ["claude-code", "cursor", "vscode", "python", "typescript", "curl"]
    assert not any("MCP_TOKEN" in text for text in snippets.values())
    assert 'async with Client("http://testserver/t/acme/mcp") as client:' in snippets["python"]
    assert "new Client(" in snippets["typescript"] and "import { Client }" in snippets["typescript"]
    assert "requires authorization" not in response.content.decode()


def test_a_protected_tenants_snippets_say_where_the_token_comes_from(admin_client: Any) -> None:
    tenant = TenantFactory(slug="vault", requires_authorization=True)

    response = admin_client.get(reverse("admin:tenants_tenant_change", args=[tenant.pk]))
    page = response.content.decode()
    snippets = {snippet.key: snippet.text for snippet in response.context["snippets"]}

    assert next(iter(snippets)) == "token"
    assert "http://testserver/oauth/token/" in snippets["token"]
    assert "resource=http://testserver/t/vault/mcp" in snippets["token"]
    for key in ("python", "typescript", "curl"):
        assert "MCP_TOKEN" in snippets[key], key
    assert "This tenant requires authorization." in page
    assert f'href="/admin/oauth/machineclient/add/?tenant={tenant.pk}"' in page
