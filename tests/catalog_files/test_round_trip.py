"""Export, apply on an empty tenant, export: the same file, byte for byte, with every kind of object, a real upstream
server and an OpenAPI document served over HTTP. Secret values never leave the platform; exported files keep the
shipped JSON Schema."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from mcp_platform.catalog_files.applying import configuration_apply
from mcp_platform.catalog_files.exporting import tenant_export
from mcp_platform.catalog_files.loading import config_load
from mcp_platform.catalog_files.planning import configuration_plan, file_check
from mcp_platform.catalog_files.schema import config_schema
from mcp_platform.quotas.models import RateLimit
from tenants import services
from tenants.bulk_changes import Actor
from tenants.models import OpenApiSource, Server, Tenant, Tool, Upstream
from tenants.secrets import secret_set
from tests.catalog_files.conftest import DocumentServer, catalog_make, curated_make, sources_make
from tests.e2e.upstreams import UpstreamServer
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

BASE = "https://mcp.example"


def empty_again(tenant: Tenant) -> Tenant:
    """The tenant deleted and made again under its slug, with nothing but its secret (never in a file)."""
    slug = tenant.slug
    services.tenant_delete(tenant=tenant)
    fresh = TenantFactory(slug=slug, name="Someone else's", instructions="")
    secret_set(tenant=fresh, name="api-token", value="another value")
    return fresh


def test_export_apply_on_an_empty_tenant_export_gives_the_same_file(
    tenant: Tenant, upstream: UpstreamServer, openapi_document: DocumentServer
) -> None:
    catalog_make(tenant)
    sources_make(tenant, upstream_url=upstream.url, document_url=openapi_document.url)
    curated_make(tenant, document_url=openapi_document.url)
    exported = tenant_export(tenant, base_url=BASE)
    fresh = empty_again(tenant)

    configuration_apply(tenant=fresh, loaded=file_check(exported), actor=Actor("test"))

    assert tenant_export(fresh, base_url=BASE) == exported
    # The sources' items came from their sources, not from the file.
    tools = set(Tool.objects.filter(tenant=fresh).values_list("name", flat=True))
    assert {"say_back", "notes_weather", "pets_listPets", "greet", "lookup"} <= tools
    assert "notes_fail" not in tools and "notes_echo" not in tools
    assert configuration_plan(tenant=fresh, loaded=file_check(exported)).plan.empty
    # The new tenant's servers name its own sources, by their new ids.
    notes, source = Upstream.objects.get(tenant=fresh), OpenApiSource.objects.get(tenant=fresh)
    assert Server.objects.get(tenant=fresh, slug="pets").selection == [f"upstream:{notes.pk}", f"openapi:{source.pk}"]
    assert RateLimit.objects.get(tenant=fresh, scope="server").server == Server.objects.get(tenant=fresh, slug="reader")


def test_servers_tags_and_change_policies_are_in_the_export_sources_by_name(
    tenant: Tenant, upstream: UpstreamServer, openapi_document: DocumentServer
) -> None:
    catalog_make(tenant)
    sources_make(tenant, upstream_url=upstream.url, document_url=openapi_document.url)
    curated_make(tenant, document_url=openapi_document.url)

    data = config_load(tenant_export(tenant)).data

    assert data["servers"] == [
        {
            "slug": "pets",
            "enabled": False,
            "selection": {"upstreams": ["notes"], "openapi_sources": ["Pet store"]},
        },
        {
            "slug": "reader",
            "title": "Reader",
            "instructions": "Read, never write.",
            "required_scopes": "reports:read",
            "selection": {
                "tools": ["say_back"],
                "resources": ["docs://guide"],
                "resource_templates": ["docs://pages/{slug}"],
                "tags": ["read-only"],
            },
        },
    ]
    assert {t["name"]: t.get("tags") for t in data["tools"]} == {"greet": ["read-only", "greetings"], "lookup": None}
    assert [p["tags"] for p in data["prompts"]] == [["read-only"]]
    assert data["upstreams"][0]["change_policy"] == "hold" and data["upstreams"][0]["withhold_incompatible"] is True
    assert data["openapi_sources"][0]["change_policy"] == "hold"
    assert "withhold_incompatible" not in data["openapi_sources"][0], "left at its default"
    assert {"scope": "server", "server": "reader", "rate": 10, "period": "minute", "burst": 5} in data["rate_limits"]


def test_the_export_names_sources_and_secrets_and_holds_no_secret_value(
    tenant: Tenant, upstream: UpstreamServer, openapi_document: DocumentServer
) -> None:
    catalog_make(tenant)
    sources_make(tenant, upstream_url=upstream.url, document_url=openapi_document.url)

    exported = tenant_export(tenant, base_url=BASE)
    data = config_load(exported).data

    assert "s3cr3t-value-never-exported" not in exported
    assert [t["name"] for t in data["tools"]] == ["greet", "lookup"]  # mirrored and imported tools are their sources'
    assert data["upstreams"] == [
        {
            "name": "notes",
            "url": upstream.url,
            "prefix": "notes_",
            "excluded": ["tools:fail"],
            "overrides": {"tools:echo": {"name": "say_back", "description": "Says the text back."}},
        }
    ]
    assert data["openapi_sources"] == [
        {
            "location": openapi_document.url,
            "name": "Pet store",
            "prefix": "pets_",
            "secret_name": "api-token",
            "tools": ["pets_get_pets_petId", "pets_listPets"],
        }
    ]
    assert exported.startswith(f"# yaml-language-server: $schema={BASE}/static/schemas/tenant-config-v1.schema.json\n")


def test_exports_are_the_same_bytes_each_time_and_keep_the_shipped_schema(tenant: Tenant) -> None:
    catalog_make(tenant)

    first, second = tenant_export(tenant), tenant_export(tenant)

    assert first == second
    assert not first.startswith("# yaml-language-server")  # no origin known: no line pointing nowhere
    errors = list(Draft202012Validator(config_schema()).iter_errors(config_load(first).data))
    assert errors == []


def test_an_empty_tenant_exports_every_section_empty(empty_tenant: Tenant) -> None:
    data = config_load(tenant_export(empty_tenant)).data

    assert data["version"] == 1 and data["tenant"] == "acme-staging"
    sections = (
        *("tools", "resources", "resource_templates", "prompts", "upstreams", "openapi_sources", "servers"),
        "rate_limits",
    )
    assert {name: data[name] for name in sections} == {name: [] for name in sections}
    assert data["settings"]["name"] == "Acme staging"
