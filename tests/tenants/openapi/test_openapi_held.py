"""Re-importing an OpenAPI source that holds changes: what the import would add, change and remove waits as pending
changes (the approved tools keep being served, a vanished operation's tool is withheld), approving applies each with
a list_changed, rejecting keeps the approved tool and the same proposal is not raised again."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from tenants.bulk_changes import Actor
from tenants.catalog import TenantCatalog
from tenants.models import OpenApiSource, PendingChange, Tenant, Tool, Withheld
from tenants.openapi.document import document_parse
from tenants.openapi.held import openapi_changes_decide
from tenants.openapi.importing import openapi_import
from tenants.openapi.translate import ImportOptions
from tenants.pinning.ledger import pending_changes
from tests.tenants.openapi.test_openapi_import import LOCATION, petstore

pytestmark = pytest.mark.django_db

LIMIT_REQUIRED = "components|parameters|Limit|required"


def run_import(tenant: Tenant, data: dict[str, Any], **policy: Any) -> Any:
    document = document_parse(json.dumps(data).encode(), location=LOCATION)
    return openapi_import(tenant=tenant, document=document, options=ImportOptions(prefix="pets_"), **policy)


def served(tenant: Tenant) -> dict[str, dict[str, Any]]:
    page = async_to_sync(TenantCatalog(Tenant.objects.get(pk=tenant.pk)).list_tools)(after=None, limit=100)
    return {t["name"]: t for t in page.items}


def pending(source: OpenApiSource) -> dict[str, PendingChange]:
    return {c.item_key: c for c in pending_changes(source=source)}


def seen(source: OpenApiSource) -> dict[str, str]:
    return {key: c.digest for key, c in pending(source).items()}


@pytest.fixture
def source(tenant: Tenant) -> OpenApiSource:
    run_import(tenant, petstore(), change_policy="hold")
    return OpenApiSource.objects.get(tenant=tenant)


def changed_document() -> dict[str, Any]:
    """listPets reworded, with its limit now required; replacePet gone; a new operation."""
    data = petstore(**{"paths|/pets|get|summary": "List the pets, oldest first", LIMIT_REQUIRED: True})
    del data["paths"]["/pets/{petId}"]["put"]
    data["paths"]["/owners"] = {"get": {"operationId": "listOwners", "responses": {"200": {"description": "ok"}}}}
    return data


def test_a_first_import_is_applied_and_a_reimport_holds_its_changes_for_review(
    tenant: Tenant, source: OpenApiSource
) -> None:
    assert source.change_policy == "hold" and "pets_listPets" in served(tenant)
    before = served(tenant)["pets_listPets"]

    report = run_import(tenant, changed_document())

    assert (report.created, report.updated, report.removed) == ([], [], [])
    assert sorted(report.held) == ["pets_listOwners", "pets_listPets", "pets_replacePet"]
    assert "3 held for review" in report.summary()
    assert served(tenant)["pets_listPets"] == before and "pets_listOwners" not in served(tenant)
    assert "pets_replacePet" not in served(tenant), "its operation is gone: withheld"
    assert Tool.objects.get(name="pets_replacePet").withheld == Withheld.REMOVED
    kinds = {key: c.kind for key, c in pending(source).items()}
    assert kinds == {"tools:pets_listOwners": "add", "tools:pets_listPets": "change", "tools:pets_replacePet": "remove"}
    assert pending(source)["tools:pets_listPets"].proposed["title"] == "List the pets, oldest first"


def test_an_incompatible_schema_withholds_its_tool_when_the_source_says_so(
    tenant: Tenant, source: OpenApiSource
) -> None:
    run_import(tenant, changed_document(), withhold_incompatible=True)

    assert "pets_listPets" not in served(tenant)
    assert Tool.objects.get(name="pets_listPets").withheld == Withheld.INCOMPATIBLE


def test_approving_applies_each_change_with_a_list_changed(
    tenant: Tenant, source: OpenApiSource, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run_import(tenant, changed_document(), withhold_incompatible=True)
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=True):
        outcome = openapi_changes_decide(source=source, seen=seen(source), approve=True, actor=Actor("t"))

    assert listener.receive() == {"type": "catalog.changed", "kind": "tools"}
    assert len(outcome.decided) == 3 and outcome.refused == [] and pending(source) == {}
    tools = served(tenant)
    assert tools["pets_listPets"]["title"] == "List the pets, oldest first"
    assert "limit" in tools["pets_listPets"]["inputSchema"]["required"]
    assert "pets_listOwners" in tools and not Tool.objects.filter(name="pets_replacePet").exists()
    assert Tool.objects.get(name="pets_listOwners").openapi_source_id == source.pk  # type: ignore[attr-defined]
    # Importing the same document again finds nothing to hold.
    assert run_import(tenant, changed_document()).held == []


def test_a_rejected_change_is_served_as_approved_and_not_raised_again(tenant: Tenant, source: OpenApiSource) -> None:
    run_import(tenant, changed_document(), withhold_incompatible=True)
    listed = {"tools:pets_listPets": seen(source)["tools:pets_listPets"]}

    openapi_changes_decide(source=source, seen=listed, approve=False)

    assert served(tenant)["pets_listPets"]["title"] == "List pets"
    assert sorted(run_import(tenant, changed_document()).held) == ["pets_listOwners", "pets_replacePet"]
    assert "tools:pets_listPets" not in pending(source)


def test_accepting_changes_again_applies_the_import_and_forgets_what_waited(
    tenant: Tenant, source: OpenApiSource
) -> None:
    run_import(tenant, changed_document())

    report = run_import(tenant, changed_document(), change_policy="accept")

    assert report.held == [] and "pets_listOwners" in report.created and "pets_replacePet" in report.removed
    assert not PendingChange.objects.exists()
    assert served(tenant)["pets_listPets"]["title"] == "List the pets, oldest first"
