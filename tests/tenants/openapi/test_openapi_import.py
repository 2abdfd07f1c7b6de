"""The import service and command: tools stored with their source, re-import updates and removes only that
source's tools, errors change nothing, one list_changed after commit, and GitHub's published document at size."""

from __future__ import annotations

import json
import lzma
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tenants.models import OpenApiSource, Tenant, Tool
from tenants.openapi.document import OpenApiError, document_parse
from tenants.openapi.importing import openapi_import, openapi_import_diff
from tenants.openapi.translate import ImportOptions, document_translate
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"
LOCATION = "https://pets.example/openapi.yaml"


def petstore(**changes: Any) -> dict[str, Any]:
    import yaml

    data: dict[str, Any] = yaml.safe_load((FIXTURES / "petstore-3.0.yaml").read_text())
    for path, value in changes.items():
        node = data
        *parents, last = path.split("|")
        for part in parents:
            node = node[part]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return data


def run_import(tenant: Tenant, data: dict[str, Any], **options: Any) -> Any:
    document = document_parse(json.dumps(data).encode(), location=LOCATION)
    return openapi_import(tenant=tenant, document=document, options=ImportOptions(**options))


def test_an_import_stores_each_operation_as_an_http_tool_of_the_source(tenant: Tenant) -> None:
    report = run_import(tenant, petstore(), prefix="pets_")

    source = OpenApiSource.objects.get(tenant=tenant)
    assert (source.name, source.location, source.prefix) == ("Petstore 3.0", LOCATION, "pets_")
    tools = Tool.objects.filter(tenant=tenant).order_by("name")
    assert [t.name for t in tools] == sorted(report.created)
    assert len(report.created) == 5 and len(report.skipped) == 2
    listed = tools.get(name="pets_listPets")
    assert (listed.backend, listed.config["method"], listed.openapi_source_id) == ("http", "GET", source.pk)


def test_one_list_changed_is_sent_after_the_import_commits(
    tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    listener = listen(tenant)
    revision = tenant.revision

    with django_capture_on_commit_callbacks(execute=True):
        run_import(tenant, petstore())

    assert listener.receive() == {"type": "catalog.changed", "kind": "tools"}
    assert listener.nothing_pending()
    assert Tenant.objects.get(pk=tenant.pk).revision == revision + 1


def test_reimport_updates_changed_removes_vanished_and_touches_nothing_else(
    tenant: Tenant, other_tenant: Tenant
) -> None:
    hand_made = ToolFactory(tenant=tenant, name="hand_made")
    run_import(tenant, petstore(), prefix="a_")
    other_location = document_parse(json.dumps(petstore()).encode(), location="https://other.example/o.yaml")
    openapi_import(tenant=tenant, document=other_location, options=ImportOptions(prefix="b_"))
    run_import(other_tenant, petstore(), prefix="a_")
    before = {t.name: t.updated_at for t in Tool.objects.filter(tenant=tenant)}

    changed = petstore(**{"paths|/pets|get|summary": "List every pet", "paths|/pets/{petId}|delete": None})
    report = run_import(tenant, changed, prefix="a_")

    assert report.updated == ["a_listPets"]
    assert report.removed == ["a_deletePet"]
    assert sorted(report.unchanged) == ["a_createPet", "a_get_pets_petId", "a_replacePet"]
    assert Tool.objects.get(tenant=tenant, name="a_listPets").title == "List every pet"
    names = set(Tool.objects.filter(tenant=tenant).values_list("name", flat=True))
    assert "a_deletePet" not in names and "b_deletePet" in names and "hand_made" in names
    assert Tool.objects.filter(tenant=other_tenant, name="a_deletePet").exists()
    untouched = {t.name: t.updated_at for t in Tool.objects.filter(tenant=tenant) if not t.name.startswith("a_")}
    assert untouched == {name: at for name, at in before.items() if not name.startswith("a_")}
    assert Tool.objects.get(pk=hand_made.pk).config == hand_made.config


def test_an_import_that_would_replace_a_tool_it_did_not_make_changes_nothing(tenant: Tenant) -> None:
    ToolFactory(tenant=tenant, name="listPets")

    with pytest.raises(OpenApiError, match="taken by tools this source did not make: listPets"):
        run_import(tenant, petstore())

    assert list(Tool.objects.filter(tenant=tenant).values_list("name", flat=True)) == ["listPets"]
    assert not OpenApiSource.objects.exists()


def test_a_refused_import_changes_nothing(tenant: Tenant) -> None:
    run_import(tenant, petstore(), secret_name="pets")
    stored = {t.name: (t.config, t.updated_at) for t in Tool.objects.filter(tenant=tenant)}
    source = OpenApiSource.objects.values().get()
    changed = petstore(**{"paths|/pets|get|summary": "Changed"})

    with pytest.raises(OpenApiError, match="'bad name!' is not a secret name"):
        run_import(tenant, changed, secret_name="bad name!")
    ToolFactory(tenant=tenant, name="newPet")
    changed["paths"]["/pets"]["post"]["operationId"] = "newPet"
    with pytest.raises(OpenApiError, match="taken by tools this source did not make: newPet"):
        run_import(tenant, changed, secret_name="pets")

    assert {t.name: (t.config, t.updated_at) for t in Tool.objects.filter(tenant=tenant) if t.name != "newPet"} == (
        stored
    )
    assert OpenApiSource.objects.values().get() == source


def test_an_operation_the_tool_rules_refuse_is_skipped_and_the_rest_imported(tenant: Tenant) -> None:
    run_import(tenant, petstore())
    broken = petstore()
    # A header name HTTP does not allow: the document is valid OpenAPI, the tool rules refuse it.
    broken["paths"]["/pets"]["get"]["parameters"].append({"name": "X Bad", "in": "header", "schema": {}})

    report = run_import(tenant, broken)

    reasons = dict(report.skipped)
    assert "'X Bad' is not a header a tool may set" in reasons["GET /pets"]
    assert report.removed == ["listPets"]
    assert sorted(report.unchanged) == ["createPet", "deletePet", "get_pets_petId", "replacePet"]


def test_selecting_operations_imports_only_those(tenant: Tenant) -> None:
    document = document_parse(json.dumps(petstore()).encode(), location=LOCATION)
    openapi_import(tenant=tenant, document=document, options=ImportOptions(), select={"GET /pets", "POST /pets"})
    assert set(Tool.objects.values_list("name", flat=True)) == {"listPets", "createPet"}

    with pytest.raises(OpenApiError, match="no importable operation 'GET /nowhere'"):
        openapi_import(tenant=tenant, document=document, options=ImportOptions(), select={"GET /nowhere"})


def test_deleting_a_tenant_removes_its_sources_and_their_tools(tenant: Tenant) -> None:
    run_import(tenant, petstore())
    tenant.delete()
    assert not OpenApiSource.objects.exists() and not Tool.objects.exists()


def test_githubs_published_document_imports_correctly_and_quickly(tenant: Tenant) -> None:
    # GitHub's REST API description as @octokit/openapi 23.0.2 publishes it (MIT, see api.github.com.LICENSE).
    content = lzma.decompress((FIXTURES / "api.github.com.json.xz").read_bytes())
    started = time.perf_counter()
    document = document_parse(content, location="https://api.github.com/openapi.json")
    report = openapi_import(tenant=tenant, document=document, options=ImportOptions(prefix="gh_", secret_name="gh"))
    elapsed = time.perf_counter() - started

    assert len(report.created) == 1223 and report.skipped == []
    assert Tool.objects.filter(tenant=tenant, backend="http").count() == 1223
    issue = Tool.objects.get(tenant=tenant, name="gh_issues_create")
    assert issue.config["url"] == "https://api.github.com/repos/{owner}/{repo}/issues"
    assert issue.config["auth"] == {"secret": "gh", "type": "bearer"}
    assert {"owner", "repo", "title", "body", "labels"} <= set(issue.input_schema["properties"])
    assert issue.input_schema["required"] == ["owner", "repo", "title"]
    repo = Tool.objects.get(tenant=tenant, name="gh_repos_get")
    assert repo.annotations == {"readOnlyHint": True} and repo.output_schema["properties"]["full_name"]
    print(f"GitHub document: 1223 operations imported in {elapsed:.2f} s")
    assert elapsed < 30

    started = time.perf_counter()
    again = openapi_import(tenant=tenant, document=document, options=ImportOptions(prefix="gh_", secret_name="gh"))
    print(f"GitHub document: re-import with nothing changed in {time.perf_counter() - started:.2f} s")
    assert len(again.unchanged) == 1223 and not again.created and not again.removed


def test_the_command_imports_a_file_and_fails_cleanly(tenant: Tenant, capsys: Any) -> None:
    call_command("openapi_import", tenant.slug, str(FIXTURES / "petstore-3.0.yaml"), "--prefix", "f_")
    assert "5 created" in capsys.readouterr().out
    assert Tool.objects.filter(tenant=tenant, name__startswith="f_").count() == 5
    source = OpenApiSource.objects.get(tenant=tenant)
    assert source.location == str((FIXTURES / "petstore-3.0.yaml").resolve())

    with pytest.raises(CommandError, match=r"Nothing was imported: .*cannot read the file"):
        call_command("openapi_import", tenant.slug, "/nonexistent/openapi.yaml")
    with pytest.raises(CommandError, match="No tenant 'nobody'"):
        call_command("openapi_import", "nobody", str(FIXTURES / "petstore-3.0.yaml"))
    with pytest.raises(CommandError, match=r"refused: 127\.0\.0\.1 \(loopback\)"):
        call_command("openapi_import", tenant.slug, "http://127.0.0.1:9/openapi.json")
    assert Tool.objects.filter(tenant=tenant).count() == 5


def test_the_diff_of_a_reimport_says_what_would_be_added_changed_and_removed_and_changes_nothing(
    tenant: Tenant,
) -> None:
    document = document_parse(json.dumps(petstore()).encode(), location=LOCATION)
    options = ImportOptions(prefix="a_")
    first = openapi_import_diff(tenant=tenant, location=LOCATION, plans=document_translate(document, options).tools)
    assert first.source is None and {op.status for op in first.operations} == {"added"}
    assert first.default_selection() == [op.key for op in first.operations], "a first import takes everything"
    openapi_import(tenant=tenant, document=document, options=options, select=["GET /pets", "DELETE /pets/{petId}"])
    ToolFactory(tenant=tenant, name="a_createPet")

    changed = petstore(**{"paths|/pets|get|summary": "List every pet", "paths|/pets/{petId}|delete": None})
    plans = document_translate(document_parse(json.dumps(changed).encode(), location=LOCATION), options).tools
    diff = openapi_import_diff(tenant=tenant, location=LOCATION, plans=plans)

    by_key = {op.key: op for op in diff.operations}
    assert (by_key["GET /pets"].status, by_key["GET /pets"].fields) == ("changed", ["description", "title"])
    assert by_key["POST /pets"].status == "taken"
    assert by_key["PUT /pets/{petId}"].status == "added" and not by_key["PUT /pets/{petId}"].imported
    assert diff.default_selection() == ["GET /pets"], "the source's own choice, read from the tools it made"
    assert diff.removed_by(["GET /pets"]) == ["a_deletePet"]
    assert diff.removed_by([]) == ["a_deletePet", "a_listPets"]
    assert Tool.objects.get(tenant=tenant, name="a_listPets").title == "List pets", "a diff changes nothing"


def test_a_reimport_tells_operations_new_in_the_document_from_those_left_out_at_the_last_import(
    tenant: Tenant,
) -> None:
    options = ImportOptions(prefix="a_")
    document = document_parse(json.dumps(petstore()).encode(), location=LOCATION)
    openapi_import(tenant=tenant, document=document, options=options, select=["GET /pets"])
    offered = ["GET /pets", "POST /pets", "GET /pets/{petId}", "PUT /pets/{petId}", "DELETE /pets/{petId}"]
    assert OpenApiSource.objects.get(tenant=tenant).offered_operations == offered, "offered, not only imported"

    owners = {"get": {"operationId": "listOwners", "responses": {"200": {"description": "Owners."}}}}
    changed = petstore(**{"paths|/owners": owners, "paths|/pets/{petId}|delete": None})
    plans = document_translate(document_parse(json.dumps(changed).encode(), location=LOCATION), options).tools

    def standing() -> dict[str, str]:
        diff = openapi_import_diff(tenant=tenant, location=LOCATION, plans=plans)
        return {op.key: op.standing for op in diff.operations}

    assert standing() == {
        "GET /pets": "imported",
        "POST /pets": "left_out",
        "GET /pets/{petId}": "left_out",
        "PUT /pets/{petId}": "left_out",
        "GET /owners": "new",
    }
    # A source imported before the offers were kept cannot tell the two apart, and says so.
    OpenApiSource.objects.update(offered_operations=None)
    assert set(standing().values()) == {"imported", "unknown"}


def test_tools_that_act_as_each_person_share_the_personal_config_and_a_bad_one_imports_nothing(
    tenant: Tenant,
) -> None:
    personal = {"type": "token_exchange", "client_id": "exchanger", "secret": "ex", "audience": "https://pets.example/"}

    with pytest.raises(OpenApiError, match='acting as each person: "auth" \\(token_exchange\\) needs "audience"'):
        run_import(tenant, petstore(), personal={**personal, "audience": ""})
    assert not Tool.objects.exists()
    report = run_import(tenant, petstore(), prefix="pets_", personal=personal)

    auths = {t.name: t.config["auth"] for t in Tool.objects.filter(tenant=tenant)}
    assert auths.pop("pets_deletePet") is None  # "security: []": it needs no credentials
    assert len(auths) == 4 and all(auth == personal for auth in auths.values())
    assert report.warnings == ["the secret 'ex' is not set yet: connecting fails until it is"]
