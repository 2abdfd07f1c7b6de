"""What the tenant's admin page shows besides its form: the endpoint URL, configuration to copy for common clients
and SDKs, the same for each of its named servers (also shown on the server's own page), the catalog at a glance
(with links to each list, filtered to the tenant), and the invitations waiting for an answer (resent and revoked
through the invitation admin's views)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django.db.models import Model
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from mcp_infra.addresses import MCP, SSE, base_url_from_request, endpoint_url
from tenants import people
from tenants.models import Prompt, Resource, ResourceTemplate, Server, Tenant, Tool

if TYPE_CHECKING:
    from django.contrib.auth.models import User

GLANCE_NAMES = 8  # names listed per kind; the link shows the rest


@dataclass(frozen=True)
class Snippet:
    key: str  # the id of its <pre> (snippet-<key>), stable for links and tests
    client: str
    where: str
    text: str


@dataclass(frozen=True)
class PendingInvitation:
    email: str
    role: str
    invited_by: str
    sent_at: datetime
    expires_at: datetime
    resend_url: str | None  # None: the person may not resend or revoke it (an owner's invitation, for an admin)
    revoke_url: str | None


@dataclass(frozen=True)
class ServerConnect:
    """One named server as its tenant's page shows it: where it is, how clients connect, where it is edited."""

    slug: str
    title: str
    enabled: bool
    endpoint_url: str
    legacy_endpoint_url: str
    snippets: list[Snippet]
    change_url: str


@dataclass(frozen=True)
class CatalogKind:
    label: str
    count: int
    names: list[str]
    url: str


# The token a protected tenant's snippets send: from the environment, so that no secret is pasted into a file.
TOKEN_VARIABLE = "MCP_TOKEN"
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _python_snippet(endpoint: str, *, token: bool) -> str:
    if not token:
        return (
            "import anyio\n"
            "from mcp.client import Client\n\n\n"
            "async def main() -> None:\n"
            f"    async with Client({json.dumps(endpoint)}) as client:\n"
            "        tools = await client.list_tools()\n"
            "        for tool in tools.tools:\n"
            '            print(tool.name, "-", tool.description or "")\n\n\n'
            "anyio.run(main)\n"
        )
    return (
        "import os\n\n"
        "import anyio\n"
        "import httpx2\n"
        "from mcp.client import Client\n"
        "from mcp.client.streamable_http import streamable_http_client\n\n"
        f"URL = {json.dumps(endpoint)}\n\n\n"
        "async def main() -> None:\n"
        f'    headers = {{"Authorization": f"Bearer {{os.environ[\'{TOKEN_VARIABLE}\']}}"}}\n'
        "    async with (\n"
        "        httpx2.AsyncClient(headers=headers) as http,\n"
        "        Client(streamable_http_client(URL, http_client=http)) as client,\n"
        "    ):\n"
        "        tools = await client.list_tools()\n"
        "        for tool in tools.tools:\n"
        '            print(tool.name, "-", tool.description or "")\n\n\n'
        "anyio.run(main)\n"
    )


def _typescript_snippet(endpoint: str, *, token: bool) -> str:
    options = (
        f", {{\n  requestInit: {{ headers: {{ Authorization: `Bearer ${{process.env.{TOKEN_VARIABLE}}}` }} }},\n}}"
        if token
        else ""
    )
    return (
        'import { Client } from "@modelcontextprotocol/sdk/client/index.js";\n'
        'import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";\n\n'
        f"const transport = new StreamableHTTPClientTransport(new URL({json.dumps(endpoint)}){options});\n"
        'const client = new Client({ name: "my-client", version: "1.0.0" });\n'
        "await client.connect(transport);\n"
        "const { tools } = await client.listTools();\n"
        'for (const tool of tools) console.log(tool.name, "-", tool.description ?? "");\n'
        "await client.close();\n"
    )


def _curl_snippet(endpoint: str, *, token: bool) -> str:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": STATELESS_META}})
    auth = f'  -H "Authorization: Bearer ${TOKEN_VARIABLE}" \\\n' if token else ""
    return (
        f"curl -s {shlex.quote(endpoint)} \\\n"
        '  -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" \\\n'
        '  -H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: tools/list" \\\n'
        f"{auth}"
        f"  -d '{body}'\n"
    )


def _token_snippet(endpoint: str, token_url: str) -> str:
    return (
        "# CLIENT_ID and CLIENT_SECRET: a machine client of this tenant (its secret is shown once, when it is added)\n"
        f'export {TOKEN_VARIABLE}=$(curl -s -u "$CLIENT_ID:$CLIENT_SECRET" {shlex.quote(token_url)} \\\n'
        f"  -d grant_type=client_credentials -d resource={shlex.quote(endpoint)} \\\n"
        "  | python3 -c 'import json, sys; print(json.load(sys.stdin)[\"access_token\"])')\n"
    )


def connection_snippets(
    *, slug: str, endpoint: str, token_url: str | None = None, key_prefix: str = ""
) -> list[Snippet]:
    """How each common client or SDK is pointed at ``endpoint`` (the server is named ``slug`` in the clients'
    configuration); each snippet's key starts with ``key_prefix`` (several servers' snippets on one page).

    With ``token_url`` (a tenant that requires authorization) the SDK and curl snippets send a bearer token from
    the ``MCP_TOKEN`` environment variable, and a first snippet gets one for a machine client at ``token_url``.
    Every snippet runs as copied (tests/e2e/test_tenant_page.py runs them against a live platform).
    """

    def as_json(value: Any) -> str:
        return json.dumps(value, indent=2)

    token = token_url is not None
    first = (
        [Snippet("token", "Access token", "in a terminal", _token_snippet(endpoint, token_url))] if token_url else []
    )
    snippets = [
        *first,
        Snippet("claude-code", "Claude Code", "in a terminal", f"claude mcp add --transport http {slug} {endpoint}"),
        Snippet("cursor", "Cursor", "~/.cursor/mcp.json", as_json({"mcpServers": {slug: {"url": endpoint}}})),
        Snippet(
            "vscode", "VS Code", ".vscode/mcp.json", as_json({"servers": {slug: {"type": "http", "url": endpoint}}})
        ),
        Snippet(
            "python",
            "Python SDK",
            'pip install "mcp>=2.3"; save as client.py; python client.py',
            _python_snippet(endpoint, token=token),
        ),
        Snippet(
            "typescript",
            "TypeScript SDK",
            "npm install @modelcontextprotocol/sdk; save as client.mjs; node client.mjs",
            _typescript_snippet(endpoint, token=token),
        ),
        Snippet("curl", "curl", "in a terminal (2026-07-28, one request)", _curl_snippet(endpoint, token=token)),
    ]
    if not key_prefix:
        return snippets
    return [Snippet(f"{key_prefix}{s.key}", s.client, s.where, s.text) for s in snippets]


def _token_url(request: HttpRequest, tenant: Tenant) -> str | None:
    return base_url_from_request(request) + reverse("oauth2_provider:token") if tenant.requires_authorization else None


def server_connect(request: HttpRequest, tenant: Tenant, server: Server) -> ServerConnect:
    """``server``'s URLs and client configuration (clients know it as ``<tenant>-<server>``)."""
    base = base_url_from_request(request)
    endpoint = endpoint_url(base, tenant.slug, MCP, server.slug)
    return ServerConnect(
        slug=server.slug,
        title=server.title,
        enabled=server.enabled,
        endpoint_url=endpoint,
        legacy_endpoint_url=endpoint_url(base, tenant.slug, SSE, server.slug),
        snippets=connection_snippets(
            slug=f"{tenant.slug}-{server.slug}",
            endpoint=endpoint,
            token_url=_token_url(request, tenant),
            key_prefix=f"server-{server.slug}-",
        ),
        change_url=reverse("admin:tenants_server_change", args=[server.pk]),
    )


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


def pending_invitations(request: HttpRequest, tenant: Tenant) -> list[PendingInvitation]:
    """The tenant's invitations waiting for an answer, with the resend and revoke addresses of those the person
    may manage (``tenants.people`` decides who may: the same rule as the invitations' list)."""
    roles = people.invitable_roles(user=cast("User", request.user), tenant_id=tenant.pk)  # the admin: signed in
    pending = []
    for invitation in people.invitations_pending(tenant=tenant):
        manages = invitation.role in roles
        inviter = invitation.invited_by
        pending.append(
            PendingInvitation(
                email=invitation.email,
                role=invitation.get_role_display(),
                invited_by=inviter.get_username() if inviter is not None else "—",
                sent_at=invitation.sent_at,
                expires_at=invitation.expires_at,
                resend_url=reverse("admin:tenants_invitation_resend", args=[invitation.pk]) if manages else None,
                revoke_url=reverse("admin:tenants_invitation_revoke", args=[invitation.pk]) if manages else None,
            )
        )
    return pending


def _url_or_none(name: str) -> str | None:
    try:
        return reverse(name)
    except NoReverseMatch:
        return None


def tenant_page_context(request: HttpRequest, tenant: Tenant) -> dict[str, Any]:
    base = base_url_from_request(request)
    endpoint = endpoint_url(base, tenant.slug, MCP)
    token_url = _token_url(request, tenant)
    return {
        "endpoint_url": endpoint,
        "legacy_endpoint_url": endpoint_url(base, tenant.slug, SSE),
        "snippets": connection_snippets(slug=tenant.slug, endpoint=endpoint, token_url=token_url),
        "servers": [server_connect(request, tenant, server) for server in tenant.servers.order_by("slug")],
        "server_add_url": reverse("admin:tenants_server_add") + f"?tenant={tenant.pk}",
        "requires_authorization": tenant.requires_authorization,
        "machine_client_add_url": _url_or_none("admin:oauth_machineclient_add"),
        "catalog": catalog_glance(tenant),
        "pending_invitations": pending_invitations(request, tenant),
        "invitations_url": reverse("admin:tenants_invitation_changelist") + f"?tenant__id__exact={tenant.pk}",
        "invite_url": reverse("admin:tenants_invitation_add") + f"?tenant={tenant.pk}",
    }
