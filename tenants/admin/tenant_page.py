"""What the tenant's admin page shows above its form: the endpoint URL, configuration to copy for common clients
and SDKs, and the catalog at a glance (with links to each list, filtered to the tenant)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db.models import Model
from django.http import HttpRequest
from django.urls import reverse

from mcp_infra.addresses import MCP, SSE, base_url_from_request, endpoint_url
from tenants.models import Prompt, Resource, ResourceTemplate, Tenant, Tool

GLANCE_NAMES = 8  # names listed per kind; the link shows the rest


@dataclass(frozen=True)
class Snippet:
    client: str
    where: str
    text: str


@dataclass(frozen=True)
class CatalogKind:
    label: str
    count: int
    names: list[str]
    url: str


def connection_snippets(*, slug: str, endpoint: str) -> list[Snippet]:
    """How each common client or SDK is pointed at ``endpoint`` (the server is named after the tenant)."""

    def as_json(value: Any) -> str:
        return json.dumps(value, indent=2)

    return [
        Snippet("Claude Code", "in a terminal", f"claude mcp add --transport http {slug} {endpoint}"),
        Snippet("Cursor", "~/.cursor/mcp.json", as_json({"mcpServers": {slug: {"url": endpoint}}})),
        Snippet("VS Code", ".vscode/mcp.json", as_json({"servers": {slug: {"type": "http", "url": endpoint}}})),
        Snippet(
            "Python SDK",
            'pip install "mcp>=2.3"',
            "from mcp.client import Client\n\n"
            f'async with Client("{endpoint}") as client:\n'
            "    print(await client.list_tools())",
        ),
        Snippet(
            "TypeScript SDK",
            "npm install @modelcontextprotocol/sdk",
            f'const transport = new StreamableHTTPClientTransport(new URL("{endpoint}"));\n'
            "await client.connect(transport);",
        ),
    ]


def _kind(model: type[Model], label: str, tenant: Tenant, name_field: str) -> CatalogKind:
    rows = model._default_manager.filter(tenant=tenant).order_by(name_field)
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist") + f"?tenant__id__exact={tenant.pk}"
    return CatalogKind(
        label=label,
        count=rows.count(),
        names=list(rows.values_list(name_field, flat=True)[:GLANCE_NAMES]),
        url=url,
    )


def catalog_glance(tenant: Tenant) -> list[CatalogKind]:
    return [
        _kind(Tool, "Tools", tenant, "name"),
        _kind(Resource, "Resources", tenant, "uri"),
        _kind(ResourceTemplate, "Resource templates", tenant, "name"),
        _kind(Prompt, "Prompts", tenant, "name"),
    ]


def tenant_page_context(request: HttpRequest, tenant: Tenant) -> dict[str, Any]:
    base = base_url_from_request(request)
    endpoint = endpoint_url(base, tenant.slug, MCP)
    return {
        "endpoint_url": endpoint,
        "legacy_endpoint_url": endpoint_url(base, tenant.slug, SSE),
        "snippets": connection_snippets(slug=tenant.slug, endpoint=endpoint),
        "catalog": catalog_glance(tenant),
    }
