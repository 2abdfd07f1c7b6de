"""A real FastAPI app under uvicorn, started as a process: its generated OpenAPI 3.1 document imported by URL
through the outbound door (127.0.0.1 allowed for the test) and from a file."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from mcp_core.env import Env, ServerIdentity
from mcp_core.features.tools import call_tool
from mcp_infra.outbound import outbound_clients_close
from tenants.catalog import TenantCatalog
from tenants.models import OpenApiSource, Tenant, Tool
from tenants.secrets import secret_set
from tests.e2e.live import ManagedProcess, free_port, wait_for_port
from tests.support import RecordingOutbound
from tests.tenants.openapi.rest_api import TOKEN as REST_TOKEN
from tests.tenants.openapi.rest_api import app

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def rest_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", "tests.tenants.openapi.rest_api:app", "--port", str(port)]
    process = ManagedProcess.start("rest-api", argv, {"PATH": "/usr/bin:/bin"}, tmp_path_factory.mktemp("rest"))
    try:
        wait_for_port(process, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stop()


@pytest.fixture
def loopback_allowed(settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}


def test_the_generated_document_is_imported_by_url(rest_api: str, tenant: Tenant, loopback_allowed: None) -> None:
    call_command("openapi_import", tenant.slug, f"{rest_api}/openapi.json", "--prefix", "shop_", "--secret", "shop")

    tools = {t.name: t for t in Tool.objects.filter(tenant=tenant)}
    assert sorted(tools) == ["shop_create_pet", "shop_delete_pet", "shop_get_pet", "shop_list_pets"]
    listed = tools["shop_list_pets"]
    assert listed.config["url"] == f"{rest_api}/pets"
    assert listed.config["query"] == {"species": "species", "limit": "limit"}
    assert listed.config["headers"] == {"x-request-id": "x-request-id"}
    assert listed.input_schema["properties"]["limit"]["maximum"] == 100
    assert listed.output_schema["properties"]["items"]["items"] == {"$ref": "#/$defs/Pet"}
    created = tools["shop_create_pet"]
    assert created.config["body"] == {"arguments": ["name", "species", "age"]}
    assert created.config["auth"] == {"secret": "shop", "type": "bearer"}
    assert created.input_schema["required"] == ["name"]
    assert tools["shop_get_pet"].config["url"] == f"{rest_api}/pets/{{pet_id}}"
    assert tools["shop_delete_pet"].annotations == {"destructiveHint": True}
    assert OpenApiSource.objects.get(tenant=tenant).location == f"{rest_api}/openapi.json"


def test_without_the_allowed_network_the_door_refuses_and_nothing_changes(rest_api: str, tenant: Tenant) -> None:
    with pytest.raises(CommandError, match="not an allowed network"):
        call_command("openapi_import", tenant.slug, f"{rest_api}/openapi.json")
    assert not Tool.objects.exists() and not OpenApiSource.objects.exists()


def test_the_generated_document_is_imported_from_a_file(rest_api: str, tenant: Tenant, tmp_path: Path) -> None:
    document = tmp_path / "shop.json"
    document.write_text(json.dumps(app.openapi()))

    with pytest.raises(CommandError, match=r"no operation .* can become a tool .*give a base URL"):
        call_command("openapi_import", tenant.slug, str(document))
    assert not OpenApiSource.objects.exists()
    call_command("openapi_import", tenant.slug, str(document), "--base-url", rest_api)

    assert Tool.objects.get(tenant=tenant, name="get_pet").config["url"] == f"{rest_api}/pets/{{pet_id}}"


def test_the_admin_imports_again_from_the_same_url_after_a_review(
    rest_api: str, tenant: Tenant, loopback_allowed: None, admin_client: Any
) -> None:
    call_command("openapi_import", tenant.slug, f"{rest_api}/openapi.json")
    source = OpenApiSource.objects.get(tenant=tenant)
    Tool.objects.filter(name="get_pet").update(description="edited by hand")

    again = admin_client.post(
        reverse("admin:tenants_openapisource_changelist"),
        {"action": "import_again", "_selected_action": [source.pk]},
    )
    assert again["Location"] == f"{reverse('admin:tenants_openapisource_import')}?source={source.pk}"
    form = admin_client.get(again["Location"]).context["form"]
    assert form.initial["url"] == f"{rest_api}/openapi.json"
    preview = admin_client.post(again["Location"], {**form.initial, "_preview": "1"})
    packed = preview.context["form"]
    data = {name: packed.initial.get(name) or "" for name in packed.fields if name != "file"}
    ticked = [row["key"] for row in preview.context["rows"] if row["selected"]]
    assert len(ticked) == 4, "what the source imported is ticked"
    review = admin_client.post(again["Location"], {**data, "operation": ticked, "_review": "1"})
    assert "0 added, 1 changed, 0 removed, 3 unchanged." in review.content.decode()
    assert Tool.objects.get(tenant=tenant, name="get_pet").description == "edited by hand"

    response = admin_client.post(again["Location"], {**data, "operation": ticked, "_import": "1"}, follow=True)

    assert "Pet shop: 0 created, 1 updated, 3 unchanged, 0 removed, 0 skipped" in response.content.decode()
    assert Tool.objects.get(tenant=tenant, name="get_pet").description == "Show one pet"


def call(tenant: Tenant, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``tools/call`` as the 2025-11-25 dispatcher runs it, on an event loop of its own (closed with its clients)."""

    async def run() -> dict[str, Any]:
        env = Env(
            version="2025-11-25",
            catalog=TenantCatalog(tenant),
            outbound=RecordingOutbound(),
            server=ServerIdentity("t", "1"),
        )
        try:
            return await call_tool({"name": name, "arguments": arguments}, env)
        finally:
            await outbound_clients_close()

    return async_to_sync(run)()


def test_imported_tools_call_the_api(rest_api: str, tenant: Tenant, loopback_allowed: None) -> None:
    call_command("openapi_import", tenant.slug, f"{rest_api}/openapi.json", "--secret", "shop")
    secret_set(tenant=tenant, name="shop", value=REST_TOKEN)

    created = call(tenant, "create_pet", {"name": "Rex", "species": "dog", "age": 2})
    assert "isError" not in created, created
    pet_id = created["structuredContent"]["id"]
    assert created["structuredContent"] == {"id": pet_id, "name": "Rex", "species": "dog", "age": 2}

    shown = call(tenant, "get_pet", {"pet_id": pet_id})
    assert shown["structuredContent"]["name"] == "Rex"
    dogs = call(tenant, "list_pets", {"species": "dog", "limit": 5, "x-request-id": "r1"})
    assert [pet["name"] for pet in dogs["structuredContent"]["items"]] == ["Rex"]

    assert "isError" not in call(tenant, "delete_pet", {"pet_id": pet_id})
    missing = call(tenant, "get_pet", {"pet_id": pet_id})
    assert missing["isError"] is True
    assert "404" in missing["content"][0]["text"] and f"no pet {pet_id}" in missing["content"][0]["text"]

    secret_set(tenant=tenant, name="shop", value="wrong")
    refused = call(tenant, "create_pet", {"name": "Nope"})
    assert refused["isError"] is True and "403" in refused["content"][0]["text"]
    assert REST_TOKEN not in json.dumps(refused)
