"""The admin import page: preview a document's operations, import the ones picked, import again, delete a
source with its tools; errors are shown on the page and change nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tenants.models import OpenApiSource, Tenant, Tool
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"
IMPORT = "admin:tenants_openapisource_import"


def upload(name: str = "petstore-3.0.yaml") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (FIXTURES / name).read_bytes(), content_type="application/yaml")


def preview(admin_client: Any, tenant: Tenant, **fields: Any) -> Any:
    data = {"tenant": tenant.pk, "file": upload(), "tool_prefix": "pets_", "_preview": "1", **fields}
    return admin_client.post(reverse(IMPORT), data)


def test_the_preview_lists_each_operation_and_what_cannot_be_imported(admin_client: Any, tenant: Tenant) -> None:
    response = preview(admin_client, tenant)

    page = response.content.decode()
    assert response.status_code == 200
    assert response.context["operations_count"] == 7
    assert [row["name"] for row in response.context["rows"]] == [
        "pets_listPets",
        "pets_createPet",
        "pets_get_pets_petId",
        "pets_replacePet",
        "pets_deletePet",
    ]
    assert {row["status"] for row in response.context["rows"]} == {"new"}
    assert 'value="GET /pets" id="op-1"' in page
    assert "multipart/form-data; HTTP tools send JSON bodies only" in page
    assert not Tool.objects.exists()  # a preview stores nothing


def test_importing_the_picked_operations_stores_only_those(admin_client: Any, tenant: Tenant) -> None:
    form = preview(admin_client, tenant).context["form"]
    data = {name: form.initial.get(name) or "" for name in form.fields if name != "file"}
    data.update(tenant=tenant.pk, operations=["GET /pets", "DELETE /pets/{petId}"], _import="1")

    response = admin_client.post(reverse(IMPORT), data)

    source = OpenApiSource.objects.get(tenant=tenant)
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:tenants_openapisource_change", args=[source.pk])
    assert sorted(Tool.objects.values_list("name", flat=True)) == ["pets_deletePet", "pets_listPets"]
    assert source.location == "petstore-3.0.yaml"
    page = admin_client.get(response["Location"]).content.decode()
    assert "Petstore 3.0" in page


def test_a_second_preview_marks_updates_and_names_taken_by_other_tools(admin_client: Any, tenant: Tenant) -> None:
    preview_form = preview(admin_client, tenant).context["form"]
    data = {name: preview_form.initial.get(name) or "" for name in preview_form.fields if name != "file"}
    admin_client.post(reverse(IMPORT), {**data, "tenant": tenant.pk, "operations": ["GET /pets"], "_import": "1"})
    ToolFactory(tenant=tenant, name="pets_createPet")

    rows = {row["name"]: row["status"] for row in preview(admin_client, tenant).context["rows"]}

    assert rows["pets_listPets"] == "update"
    assert rows["pets_createPet"] == "name taken"
    assert rows["pets_deletePet"] == "new"


def test_an_invalid_document_is_reported_on_the_page(admin_client: Any, tenant: Tenant) -> None:
    bad = SimpleUploadedFile("bad.yaml", b"openapi: 3.0.3\ninfo: [\n", content_type="application/yaml")
    response = admin_client.post(reverse(IMPORT), {"tenant": tenant.pk, "file": bad, "_preview": "1"})

    assert response.status_code == 200
    assert "bad.yaml: not valid YAML at line 3" in response.content.decode()
    assert not OpenApiSource.objects.exists()


def test_the_form_needs_a_url_or_a_file(admin_client: Any, tenant: Tenant) -> None:
    response = admin_client.post(reverse(IMPORT), {"tenant": tenant.pk, "_preview": "1"})
    assert "Give the document&#x27;s URL or upload its file" in response.content.decode()


def test_a_url_on_a_private_address_is_refused_by_the_door(admin_client: Any, tenant: Tenant) -> None:
    response = admin_client.post(
        reverse(IMPORT), {"tenant": tenant.pk, "url": "http://10.0.0.5/openapi.json", "_preview": "1"}
    )
    assert "refused: 10.0.0.5 (private)" in response.content.decode()


def test_deleting_a_source_removes_its_tools_and_tells_clients(
    admin_client: Any, tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    preview_form = preview(admin_client, tenant).context["form"]
    data = {name: preview_form.initial.get(name) or "" for name in preview_form.fields if name != "file"}
    admin_client.post(reverse(IMPORT), {**data, "tenant": tenant.pk, "operations": ["GET /pets"], "_import": "1"})
    hand_made = ToolFactory(tenant=tenant, name="hand_made")
    source = OpenApiSource.objects.get()
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(reverse("admin:tenants_openapisource_delete", args=[source.pk]), {"post": "yes"})

    assert list(Tool.objects.values_list("pk", flat=True)) == [hand_made.pk]
    assert listener.receive() == {"type": "catalog.changed", "kind": "tools"}


def test_staff_without_permission_cannot_import(client: Any, tenant: Tenant) -> None:
    from tests.factories import UserFactory

    client.force_login(UserFactory(username="viewer", is_staff=True))
    assert client.get(reverse(IMPORT)).status_code == 403
