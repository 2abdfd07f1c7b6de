"""The admin import page: preview a document's operations, import the ones picked, import again, delete a
source with its tools; errors are shown on the page and change nothing."""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from tenants.models import OpenApiSource, Tenant, Tool
from tenants.secrets import secret_set
from tests.factories import MembershipFactory, TenantFactory, ToolFactory, UserFactory

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
    assert {row["status"] for row in response.context["rows"]} == {"new tool"}
    assert 'name="operation" value="GET /pets" id="op-1" aria-label="Import GET /pets" checked' in page
    assert "multipart/form-data; HTTP tools send JSON bodies only" in page
    assert not Tool.objects.exists()  # a preview stores nothing


def keep_only(response: Any, tenant: Tenant, keys: list[str], step: str = "_import") -> dict[str, Any]:
    """The import form as the preview leaves it, with only ``keys`` ticked to be imported."""
    form = response.context["form"]
    data = {name: form.initial.get(name) or "" for name in form.fields if name != "file"}
    return {**data, "tenant": tenant.pk, "operation": keys, step: "1"}


def test_importing_stores_only_the_operations_ticked(admin_client: Any, tenant: Tenant) -> None:
    data = keep_only(preview(admin_client, tenant), tenant, ["GET /pets", "DELETE /pets/{petId}"])

    response = admin_client.post(reverse(IMPORT), data)

    source = OpenApiSource.objects.get(tenant=tenant)
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:tenants_openapisource_change", args=[source.pk])
    assert sorted(Tool.objects.values_list("name", flat=True)) == ["pets_deletePet", "pets_listPets"]
    assert source.location == "petstore-3.0.yaml"
    page = admin_client.get(response["Location"]).content.decode()
    assert "Petstore 3.0" in page


def test_a_second_preview_marks_updates_and_names_taken_by_other_tools(admin_client: Any, tenant: Tenant) -> None:
    admin_client.post(reverse(IMPORT), keep_only(preview(admin_client, tenant), tenant, ["GET /pets"]))
    ToolFactory(tenant=tenant, name="pets_createPet")

    response = preview(admin_client, tenant)
    rows = {row["name"]: row for row in response.context["rows"]}

    assert rows["pets_listPets"]["status"] == "unchanged" and rows["pets_listPets"]["selected"]
    assert rows["pets_createPet"]["status"] == "left out before; name taken by another tool"
    assert not rows["pets_createPet"]["selected"]
    assert 'value="POST /pets" id="op-2" aria-label="Import POST /pets" disabled' in response.content.decode()
    # Left out at the first import: still left out, unless ticked now.
    assert rows["pets_deletePet"]["status"] == "left out before" and not rows["pets_deletePet"]["selected"]


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
    admin_client.post(reverse(IMPORT), keep_only(preview(admin_client, tenant), tenant, ["GET /pets"]))
    hand_made = ToolFactory(tenant=tenant, name="hand_made")
    source = OpenApiSource.objects.get()
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(reverse("admin:tenants_openapisource_delete", args=[source.pk]), {"post": "yes"})

    assert list(Tool.objects.values_list("pk", flat=True)) == [hand_made.pk]
    assert listener.receive() == {"type": "catalog.changed", "kind": "tools"}


def test_staff_flag_without_a_tenant_to_administer_cannot_import(client: Any, tenant: Tenant) -> None:
    from tests.factories import MembershipFactory, UserFactory

    client.force_login(UserFactory(username="viewer", is_staff=True))
    assert client.get(reverse(IMPORT)).status_code == 302  # to the sign-in page: no admin at all

    member = UserFactory(username="member")
    MembershipFactory(tenant=tenant, user=member, role="member")
    client.force_login(member)
    assert client.get(reverse(IMPORT)).status_code == 302


def test_the_tenant_page_links_to_the_import_page_for_that_tenant(admin_client: Any, tenant: Tenant) -> None:
    page = admin_client.get(reverse("admin:tenants_tenant_change", args=[tenant.pk])).content.decode()
    link = f"{reverse(IMPORT)}?tenant={tenant.pk}"
    assert f'href="{link}"' in page

    form = admin_client.get(link).content.decode()
    assert f'<option value="{tenant.pk}" selected>' in form


def test_a_document_of_githubs_size_goes_through_preview_and_import(admin_client: Any, tenant: Tenant) -> None:
    content = lzma.decompress((FIXTURES / "api.github.com.json.xz").read_bytes())
    github = SimpleUploadedFile("api.github.com.json", content, content_type="application/json")
    response = admin_client.post(reverse(IMPORT), {"tenant": tenant.pk, "file": github, "_preview": "1"})
    assert len(response.context["rows"]) == 1223
    deletes = [row["key"] for row in response.context["rows"] if row["method"] == "DELETE"]

    kept = [row["key"] for row in response.context["rows"] if row["method"] != "DELETE"]
    imported = admin_client.post(reverse(IMPORT), keep_only(response, tenant, kept))

    assert imported.status_code == 302
    assert Tool.objects.filter(tenant=tenant).count() == 1223 - len(deletes) > 1000
    assert not Tool.objects.filter(tenant=tenant, annotations__destructiveHint=True).exists()


def test_an_imported_tool_shows_its_source(admin_client: Any, tenant: Tenant) -> None:
    admin_client.post(reverse(IMPORT), keep_only(preview(admin_client, tenant), tenant, ["GET /pets"]))
    tool = Tool.objects.get(name="pets_listPets")

    page = admin_client.get(reverse("admin:tenants_tool_change", args=[tool.pk])).content.decode()

    assert "Petstore 3.0" in page
    filtered = admin_client.get(
        reverse("admin:tenants_tool_changelist"), {"openapi_source__id__exact": tool.openapi_source_id}
    )
    assert filtered.status_code == 200 and "pets_listPets" in filtered.content.decode()


def test_a_page_loaded_before_the_boxes_meant_import_is_read_as_it_meant(admin_client: Any, tenant: Tenant) -> None:
    response = preview(admin_client, tenant)
    data = keep_only(response, tenant, [])
    del data["operation"]
    data["leave_out"] = [row["key"] for row in response.context["rows"] if row["key"] != "GET /pets"]

    assert admin_client.post(reverse(IMPORT), data).status_code == 302

    assert list(Tool.objects.values_list("name", flat=True)) == ["pets_listPets"]


def test_importing_again_reviews_what_is_added_changed_and_removed_before_anything_changes(
    admin_client: Any, tenant: Tenant
) -> None:
    admin_client.post(
        reverse(IMPORT), keep_only(preview(admin_client, tenant), tenant, ["GET /pets", "DELETE /pets/{petId}"])
    )
    source = OpenApiSource.objects.get(tenant=tenant)
    Tool.objects.filter(name="pets_listPets").update(description="Edited since.")
    again = admin_client.get(reverse(IMPORT), {"source": source.pk})
    assert again.context["form"].initial["tool_prefix"] == "pets_"

    # The source's own choice is ticked; tick one more and untick one.
    response = preview(admin_client, tenant)
    assert [row["key"] for row in response.context["rows"] if row["selected"]] == ["GET /pets", "DELETE /pets/{petId}"]
    review = admin_client.post(reverse(IMPORT), keep_only(response, tenant, ["GET /pets", "POST /pets"], "_review"))

    page = review.content.decode()
    assert review.context["review"] and "1 added, 1 changed, 1 removed, 0 unchanged." in page
    assert "<code>pets_createPet</code> from <code>POST /pets</code>" in page
    assert "<code>pets_listPets</code>: description" in page
    assert '<ul id="review-removed"><li><code>pets_deletePet</code></li></ul>' in page
    assert Tool.objects.get(name="pets_listPets").description == "Edited since.", "a review changes nothing"

    back = admin_client.post(reverse(IMPORT), keep_only(review, tenant, ["GET /pets", "POST /pets"], "_back"))
    assert [row["key"] for row in back.context["rows"] if row["selected"]] == ["GET /pets", "POST /pets"]
    done = admin_client.post(reverse(IMPORT), keep_only(review, tenant, ["GET /pets", "POST /pets"]))

    assert done.status_code == 302
    assert sorted(Tool.objects.values_list("name", flat=True)) == ["pets_createPet", "pets_listPets"]
    assert Tool.objects.get(name="pets_listPets").description != "Edited since."
    source_page = admin_client.get(reverse("admin:tenants_openapisource_change", args=[source.pk])).content.decode()
    assert f'href="{reverse(IMPORT)}?source={source.pk}">Import again</a>' in source_page


def test_a_review_with_nothing_ticked_says_so(admin_client: Any, tenant: Tenant) -> None:
    response = preview(admin_client, tenant)
    data = keep_only(response, tenant, [], "_review")
    del data["operation"]

    review = admin_client.post(reverse(IMPORT), data)

    assert not review.context["review"] and "No operation is ticked" in review.content.decode()
    assert not Tool.objects.exists()


def test_another_tenants_source_cannot_be_imported_again_from_its_id(client: Any, tenant: Tenant) -> None:
    source = OpenApiSource.objects.create(
        tenant=tenant, name="Theirs", location="https://theirs.example/openapi.json", imported_at=timezone.now()
    )
    other = TenantFactory(slug="other")
    person = UserFactory(username="other-owner")
    MembershipFactory(tenant=other, user=person, role="owner")
    client.force_login(person)

    assert client.get(reverse(IMPORT), {"source": source.pk}).status_code == 404
    assert client.get(reverse(IMPORT), {"tenant": other.pk}).status_code == 200


def test_a_reimport_groups_the_operations_new_in_the_document_left_out_before_and_imported(
    admin_client: Any, tenant: Tenant
) -> None:
    admin_client.post(
        reverse(IMPORT), keep_only(preview(admin_client, tenant), tenant, ["GET /pets", "DELETE /pets/{petId}"])
    )
    document = yaml.safe_load((FIXTURES / "petstore-3.0.yaml").read_text())
    document["paths"]["/owners"] = {
        "get": {"operationId": "listOwners", "responses": {"200": {"description": "Owners."}}}
    }
    del document["paths"]["/pets/{petId}"]["delete"]
    changed = SimpleUploadedFile("petstore-3.0.yaml", json.dumps(document).encode(), content_type="application/yaml")

    response = preview(admin_client, tenant, file=changed)

    groups = {g["id"]: [(r["key"], r["status"], r["selected"]) for r in g["rows"]] for g in response.context["groups"]}
    assert groups == {
        "new": [("GET /owners", "new", False)],
        "left_out": [
            ("POST /pets", "left out before", False),
            ("GET /pets/{petId}", "left out before", False),
            ("PUT /pets/{petId}", "left out before", False),
        ],
        "imported": [("GET /pets", "unchanged", True)],
    }
    page = response.content.decode()
    for heading in ("New in the document (1)", "Left out at the last import (3)", "Imported (1)"):
        assert f'<th scope="rowgroup" colspan="7">{heading}</th>' in page
    assert 'value="GET /owners" id="op-5" aria-label="Import GET /owners">' in page  # ids follow the document
    assert response.context["vanishing"] == ["pets_deletePet"], "gone from the document: removed, in no group"


def test_the_secret_is_picked_from_the_tenants_secret_names_and_a_missing_one_is_refused(
    client: Any, tenant: Tenant
) -> None:
    secret_set(tenant=tenant, name="pets-key", value="never-shown-ours")
    secret_set(tenant=TenantFactory(slug="other"), name="other-key", value="never-shown-theirs")
    owner = UserFactory(username="olivia")
    MembershipFactory(tenant=tenant, user=owner, role="owner")
    client.force_login(owner)

    form = client.get(reverse(IMPORT), {"tenant": tenant.pk}).content.decode()
    refused = preview(client, tenant, secret_name="gone")
    imported = client.post(
        reverse(IMPORT), keep_only(preview(client, tenant, secret_name="pets-key"), tenant, ["GET /pets"])
    )

    assert '<option value="pets-key">pets-key</option>' in form
    assert "other-key" not in form and "never-shown" not in form
    assert "translation" not in refused.context
    assert "There is no secret &#x27;gone&#x27; in acme" in refused.content.decode()
    assert imported.status_code == 302
    assert OpenApiSource.objects.get(tenant=tenant).secret_name == "pets-key"


PERSONAL_KEY = {
    "acts_as": "user_key",
    "person_placement": "header",
    "person_key_name": "X-Pet-Key",
    "person_label": "Pet store key",
}


def test_the_tools_act_as_each_person_with_the_shared_secret_for_machine_clients(
    admin_client: Any, tenant: Tenant
) -> None:
    secret_set(tenant=tenant, name="pets-key", value="robot-key-value")
    fields = {**PERSONAL_KEY, "machine": "shared", "secret_name": "pets-key"}

    imported = admin_client.post(
        reverse(IMPORT),
        keep_only(preview(admin_client, tenant, **fields), tenant, ["GET /pets", "DELETE /pets/{petId}"]),
    )

    assert imported.status_code == 302
    source = OpenApiSource.objects.get(tenant=tenant)
    assert source.secret_name == "pets-key"
    assert Tool.objects.get(name="pets_listPets").config["auth"] == {
        "type": "user_key",
        "placement": "header",
        "name": "X-Pet-Key",
        "label": "Pet store key",
        # Machine clients: the scheme the document names, with the tenant's secret.
        "machine": {"secret": "pets-key", "type": "header", "name": "X-API-Key"},
    }
    assert Tool.objects.get(name="pets_deletePet").config["auth"] is None  # it needs no credentials
    again = admin_client.get(reverse(IMPORT), {"source": source.pk}).context["form"]
    assert {name: again.initial.get(name) for name in (*PERSONAL_KEY, "machine", "secret_name")} == fields


def test_machine_clients_refused_keep_no_shared_secret(admin_client: Any, tenant: Tenant) -> None:
    oauth = {
        "acts_as": "user_oauth",
        "person_issuer": "https://login.pets.example",
        "person_client": "dynamic",
        "person_scope": "pets.read",
        "machine": "refused",
        "secret_name": "pets-key",
    }
    secret_set(tenant=tenant, name="pets-key", value="robot-key-value")

    admin_client.post(reverse(IMPORT), keep_only(preview(admin_client, tenant, **oauth), tenant, ["GET /pets"]))

    source = OpenApiSource.objects.get(tenant=tenant)
    assert source.secret_name == ""
    assert Tool.objects.get(name="pets_listPets").config["auth"] == {
        "type": "user_oauth",
        "issuer": "https://login.pets.example",
        "client": "dynamic",
        "scope": "pets.read",
    }
    again = admin_client.get(reverse(IMPORT), {"source": source.pk}).context["form"]
    assert again.initial["acts_as"] == "user_oauth" and again.initial["machine"] == "refused"


def test_what_each_person_acting_needs_is_asked_before_the_preview(admin_client: Any, tenant: Tenant) -> None:
    no_issuer = preview(admin_client, tenant, acts_as="user_oauth", person_client="metadata_document")
    no_machine_secret = preview(admin_client, tenant, **PERSONAL_KEY, machine="shared")
    no_client_secret = preview(
        admin_client,
        tenant,
        acts_as="token_exchange",
        person_client_id="exchanger",
        person_client_secret="gone",
        person_audience="https://pets.example/",
    )

    assert "translation" not in no_issuer.context and "person_issuer" in no_issuer.context["form"].errors
    assert list(no_machine_secret.context["form"].errors) == ["machine"]
    assert list(no_client_secret.context["form"].errors) == ["person_client_secret"]
    assert not Tool.objects.exists()


def test_the_import_page_shows_every_field_in_its_fieldset(admin_client: Any, tenant: Tenant) -> None:
    page = admin_client.get(reverse(IMPORT), {"tenant": tenant.pk})
    form = page.context["form"]
    shown = [field.name for _, _, fields in form.groups() for field in fields]

    assert sorted(shown + [field.name for field in form.hidden_fields()]) == sorted(form.fields)
    html = page.content.decode()
    assert "<h2>Acts as</h2>" in html and "<h2>Shared credentials</h2>" in html
    assert "Each person: token exchange" in html and "Client ID metadata document (recommended)" in html
