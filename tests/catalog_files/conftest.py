"""Fixtures of the configuration-file tests: tenants, applying a file and the problems of its plan, a catalog of
every kind made through the services, an OpenAPI document served on a loopback address, servers curating them, and a
snapshot of every row in the database."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.apps import apps
from django.conf import settings
from django.test import override_settings

from mcp_platform.catalog_files.applying import ApplyReport, configuration_apply
from mcp_platform.catalog_files.loading import ConfigFileError
from mcp_platform.catalog_files.planning import configuration_plan, file_check
from mcp_platform.quotas import services as quotas
from tenants import services
from tenants.bulk_changes import Actor
from tenants.federation.services import upstream_add, upstream_items_update, upstream_update
from tenants.models import OpenApiSource, Prompt, Resource, ResourceTemplate, Tenant, Tool, Upstream
from tenants.openapi.document import document_parse
from tenants.openapi.fetching import document_fetch_once
from tenants.openapi.importing import openapi_import
from tenants.openapi.translate import ImportOptions
from tenants.secrets import secret_set
from tenants.servers import server_create
from tests.e2e.upstreams import UpstreamServer, upstream_server
from tests.factories import TenantFactory
from tests.tenants.conftest import channel_layer  # noqa: F401  (the tenants tests' fresh in-memory channel layer)

PETSTORE = Path(__file__).parents[1] / "tenants" / "openapi" / "fixtures" / "petstore-3.0.yaml"
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="


@pytest.fixture
def tenant() -> Tenant:
    return TenantFactory(slug="acme", name="Acme")


@pytest.fixture
def empty_tenant() -> Tenant:
    return TenantFactory(slug="acme-staging", name="Acme staging", instructions="")


@pytest.fixture
def loopback_allowed() -> Iterator[None]:
    # The outbound door refuses loopback unless a deployment allows it; these tests do, explicitly.
    with override_settings(MCP_PLATFORM={**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}):
        yield


class DocumentServer(ThreadingHTTPServer):
    """Serves one document at ``/openapi.yaml`` on a loopback address, and counts the requests."""

    daemon_threads = True

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests += 1
                found = self.path == "/openapi.yaml"
                payload = outer.body if found else b"not found"
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/yaml")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/openapi.yaml"


@pytest.fixture
def openapi_document(loopback_allowed: None) -> Iterator[DocumentServer]:
    server = DocumentServer(PETSTORE.read_bytes())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def apply(tenant: Tenant, text: str | bytes, **options: Any) -> ApplyReport:
    """Apply the file ``text`` to ``tenant`` (``options``: those of ``configuration_apply``)."""
    return configuration_apply(tenant=tenant, loaded=file_check(text), actor=Actor("test"), **options)


def problems_of(tenant: Tenant, text: str) -> list[str]:
    """The problems the plan of ``text`` for ``tenant`` is refused with."""
    with pytest.raises(ConfigFileError) as refused:
        configuration_plan(tenant=tenant, loaded=file_check(text))
    return [str(problem) for problem in refused.value.problems]


def catalog_make(tenant: Tenant) -> None:
    """One of each kind of the tenant's own objects, as an admin would make them (secrets first: files name them)."""
    secret_set(tenant=tenant, name="api-token", value="s3cr3t-value-never-exported")
    services.tenant_update(
        tenant=tenant,
        data={
            "instructions": "Use the tools wisely.\nAsk before deleting.",
            "allowed_origins": ["https://app.example"],
        },
    )
    services.tool_create(
        tenant=tenant,
        name="greet",
        description="Say hello.",
        input_schema={"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]},
        config={"content": [{"type": "text", "text": "Hello!"}], "isError": False},
        annotations={"readOnlyHint": True},
        required_scopes="greetings:read",
    )
    services.tool_create(
        tenant=tenant,
        name="lookup",
        title="Look up an order",
        backend="http",
        config={
            "method": "GET",
            "url": "https://api.example/orders/{id}",
            "query": {},
            "headers": {},
            "body": None,
            "auth": {"type": "bearer", "secret": "api-token"},
            "timeout": 30,
        },
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        task_support="optional",
        enabled=False,
    )
    services.resource_create(tenant=tenant, uri="docs://guide", name="guide", text="Read me.\n", mime_type="text/plain")
    services.resource_create(tenant=tenant, uri="docs://logo", name="logo", blob=PNG_1PX, mime_type="image/png")
    services.resource_template_create(
        tenant=tenant,
        name="page",
        uri_template="docs://pages/{slug}",
        config={"text": "Page {slug}"},
        completions={"slug": ["intro", "faq"]},
    )
    services.prompt_create(
        tenant=tenant,
        name="summarize",
        description="Summarize a text.",
        arguments=[{"name": "text", "required": True}],
        messages=[{"role": "user", "content": {"type": "text", "text": "Summarize: {{text}}"}}],
    )
    quotas.rate_limit_create(tenant=tenant, scope="client", rate=60, period=60, burst=20)
    quotas.rate_limit_create(tenant=tenant, scope="tool", tool_name="greet", rate=5, period=1, burst=10)


def database_snapshot() -> dict[str, list[dict[str, Any]]]:
    """Every row of every model, as JSON text by model: equal snapshots mean nothing changed."""
    snapshot = {}
    for model in apps.get_models():
        rows = model._default_manager.order_by("pk").values()
        snapshot[model._meta.label] = json.loads(json.dumps(list(rows), default=str))
    return snapshot


@pytest.fixture
def upstream(tmp_path: Path, loopback_allowed: None) -> Iterator[UpstreamServer]:
    """A real MCP server (the official SDK's) in a process of its own."""
    with ExitStack() as stack:
        yield upstream_server(stack, tmp_path / "upstream")


def sources_make(tenant: Tenant, *, upstream_url: str, document_url: str) -> None:
    """An upstream (one item left out, one renamed) and an OpenAPI source (three operations of five), as the admin
    adds them."""
    added, _ = upstream_add(tenant=tenant, name="notes", url=upstream_url, prefix="notes_")
    upstream_items_update(
        upstream=added,
        excluded=["tools:fail"],
        overrides={"tools:echo": {"name": "say_back", "description": "Says the text back."}},
    )
    content = async_to_sync(document_fetch_once)(document_url, tenant_id=tenant.pk)
    document = document_parse(content, location=document_url)
    openapi_import(
        tenant=tenant,
        document=document,
        options=ImportOptions(prefix="pets_", secret_name="api-token"),
        name="Pet store",
        select=["GET /pets", "GET /pets/{petId}"],
    )


def curated_make(tenant: Tenant, *, document_url: str) -> None:
    """On top of ``catalog_make`` and ``sources_make``: tags on the tenant's own items, both sources holding changes,
    a server choosing items by key (a mirrored one too) and by tag with a rate limit of its own, and a disabled one
    choosing both sources."""
    services.tool_update(tool=Tool.objects.get(tenant=tenant, name="greet"), data={"tags": ["read-only", "greetings"]})
    services.resource_update(resource=Resource.objects.get(tenant=tenant, uri="docs://guide"), data={"tags": ["docs"]})
    page = ResourceTemplate.objects.get(tenant=tenant, name="page")
    services.resource_template_update(template=page, data={"tags": ["docs"]})
    services.prompt_update(prompt=Prompt.objects.get(tenant=tenant, name="summarize"), data={"tags": ["read-only"]})
    notes = Upstream.objects.get(tenant=tenant, name="notes")
    upstream_update(upstream=notes, data={"change_policy": "hold", "withhold_incompatible": True})
    content = async_to_sync(document_fetch_once)(document_url, tenant_id=tenant.pk)
    openapi_import(
        tenant=tenant,
        document=document_parse(content, location=document_url),
        options=ImportOptions(prefix="pets_", secret_name="api-token"),
        name="Pet store",
        select=["GET /pets", "GET /pets/{petId}"],
        change_policy="hold",
    )
    source = OpenApiSource.objects.get(tenant=tenant, location=document_url)
    reader = server_create(
        tenant=tenant,
        slug="reader",
        title="Reader",
        instructions="Read, never write.",
        selection=["tools:say_back", "resources:docs://guide", "templates:docs://pages/{slug}", "tag:read-only"],
        required_scopes="reports:read",
    )
    server_create(tenant=tenant, slug="pets", selection=[f"upstream:{notes.pk}", f"openapi:{source.pk}"], enabled=False)
    quotas.rate_limit_create(tenant=tenant, scope="server", server=reader, rate=10, period=60, burst=5)
