"""Prompts, resource templates and resources in the admin without JSON: a prompt's arguments and messages as rows, a
static template's text as a text box, a resource's binary content as a file; every built-in entry opens and saves
unchanged from its page, and what the fields cannot hold stays whole in the JSON boxes."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from tenants import services
from tenants.admin.uploads import MAX_UPLOAD_BYTES, base64_encode
from tenants.backends.static import prompt_render
from tenants.builtin.conformance_fixtures import CONFORMANCE
from tenants.builtin.demo_fixtures import DEMO
from tenants.models import Prompt, Resource, ResourceTemplate, Tenant
from tests.images import PNG
from tests.tenants.admin.page_forms import form_posted, with_values

pytestmark = pytest.mark.django_db

JSONObject = dict[str, Any]


def errors_of(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 200, response.status_code
    return {k: list(v) for k, v in response.context["adminform"].form.errors.items()}


def add_form(client: Client, model: str, tenant: Tenant, **values: Any) -> dict[str, list[Any]]:
    page = client.get(reverse(f"admin:tenants_{model}_add"), {"tenant": tenant.pk}).content.decode()
    return with_values(form_posted(page, f"{model}_form"), tenant=str(tenant.pk), **values)


def test_a_static_prompt_is_written_as_argument_and_message_rows(admin_client: Client, tenant: Tenant) -> None:
    form = add_form(
        admin_client,
        "prompt",
        tenant,
        name="review",
        backend="static",
        argument_rows_0_name="language",
        argument_rows_0_description="The code's language",
        argument_rows_0_required="yes",
        argument_rows_1_name="code",
        argument_rows_1_required="no",
        message_rows_0_role="user",
        message_rows_0_text="Review this {{language}}:\r\n{{code}}",
    )
    form |= {"message_rows_1_role": ["assistant"], "message_rows_1_text": ["Gladly."]}

    response = admin_client.post(reverse("admin:tenants_prompt_add"), form)

    assert response.status_code == 302, errors_of(response)
    prompt = Prompt.objects.get(tenant=tenant, name="review")
    assert prompt.arguments == [
        {"name": "language", "description": "The code's language", "required": True},
        {"name": "code", "required": False},
    ]
    assert prompt.messages == [
        {"role": "user", "content": {"type": "text", "text": "Review this {{language}}:\n{{code}}"}},
        {"role": "assistant", "content": {"type": "text", "text": "Gladly."}},
    ]
    assert prompt_render(prompt, {"language": "go", "code": "x := 1"})["messages"][0]["content"]["text"] == (
        "Review this go:\nx := 1"
    )


def test_a_placeholder_without_its_argument_is_refused_on_the_message_rows(
    admin_client: Client, tenant: Tenant
) -> None:
    form = add_form(admin_client, "prompt", tenant, name="loose", backend="static", message_rows_0_text="Hello {{who}}")

    errors = errors_of(admin_client.post(reverse("admin:tenants_prompt_add"), form))

    assert errors["message_rows"] == ["messages[0] uses {{who}} but the prompt declares no argument 'who'."]


def test_rows_and_json_given_together_are_refused(admin_client: Client, tenant: Tenant) -> None:
    form = add_form(
        admin_client,
        "prompt",
        tenant,
        name="twice",
        backend="static",
        argument_rows_0_name="a",
        arguments='[{"name": "b"}]',
        message_rows_0_text="Hi",
        argument_rows_1_description="a description without a name",
    )

    errors = errors_of(admin_client.post(reverse("admin:tenants_prompt_add"), form))

    assert errors["argument_rows"] == ["Argument 2: an argument needs a name."]
    assert not Prompt.objects.filter(name="twice").exists()
    fixed = with_values(form, argument_rows_1_description="")
    errors = errors_of(admin_client.post(reverse("admin:tenants_prompt_add"), fixed))
    assert errors["argument_rows"] == ["These are given twice: here and in Arguments (JSON)."]


def static_entries(kind: str) -> list[JSONObject]:
    return [
        entry
        for spec in (DEMO, CONFORMANCE)
        for entry in getattr(spec, kind)
        if entry.get("backend", "static") == "static"
    ]


@pytest.mark.parametrize("spec", static_entries("prompts"), ids=lambda p: p["name"])
def test_every_built_in_static_prompt_opens_and_saves_unchanged(
    admin_client: Client, tenant: Tenant, spec: JSONObject
) -> None:
    prompt = services.prompt_create(tenant=tenant, **spec)
    stored = (prompt.arguments, prompt.messages, prompt.config)
    url = reverse("admin:tenants_prompt_change", args=[prompt.pk])

    response = admin_client.post(url, form_posted(admin_client.get(url).content.decode(), "prompt_form"))

    assert response.status_code == 302, errors_of(response)
    prompt.refresh_from_db()
    assert (prompt.arguments, prompt.messages, prompt.config) == stored


@pytest.mark.parametrize("spec", static_entries("templates"), ids=lambda t: t["name"])
def test_every_built_in_static_template_opens_in_its_text_box_and_saves_unchanged(
    admin_client: Client, tenant: Tenant, spec: JSONObject
) -> None:
    template = services.resource_template_create(tenant=tenant, **spec)
    url = reverse("admin:tenants_resourcetemplate_change", args=[template.pk])
    page = admin_client.get(url)

    response = admin_client.post(url, form_posted(page.content.decode(), "resourcetemplate_form"))

    assert response.status_code == 302, errors_of(response)
    assert page.context["adminform"].form.initial["static_template_text"] == spec["config"]["text"]
    template.refresh_from_db()
    assert template.config == spec["config"]


def test_a_prompt_the_rows_cannot_hold_keeps_its_messages_in_json(admin_client: Client, tenant: Tenant) -> None:
    (spec,) = [p for p in CONFORMANCE.prompts if p["name"] == "test_prompt_with_embedded_resource"]
    prompt = services.prompt_create(tenant=tenant, **spec)

    form = admin_client.get(reverse("admin:tenants_prompt_change", args=[prompt.pk])).context["adminform"].form

    assert form.initial["message_rows"] == [] and form.initial["messages"] == spec["messages"]
    assert form.initial["argument_rows"] == spec["arguments"] and form.initial["arguments"] is None


def test_a_static_template_is_written_as_text(admin_client: Client, tenant: Tenant) -> None:
    form = add_form(
        admin_client,
        "resourcetemplate",
        tenant,
        name="greeting",
        uri_template="demo://greeting/{name}",
        backend="static",
        static_template_text="Hello, {name}!\r\n",
        config="",
    )

    response = admin_client.post(reverse("admin:tenants_resourcetemplate_add"), form)

    assert response.status_code == 302, errors_of(response)
    assert ResourceTemplate.objects.get(name="greeting").config == {"text": "Hello, {name}!\n"}


def test_a_file_becomes_a_resources_binary_content_with_its_image_type(admin_client: Client, tenant: Tenant) -> None:
    form = add_form(
        admin_client,
        "resource",
        tenant,
        uri="docs://pixel",
        name="pixel",
        blob_file=SimpleUploadedFile("pixel.bin", PNG, content_type="application/octet-stream"),
    )

    response = admin_client.post(reverse("admin:tenants_resource_add"), form)

    assert response.status_code == 302, errors_of(response)
    resource = Resource.objects.get(uri="docs://pixel")
    assert (resource.blob, resource.text, resource.mime_type) == (base64_encode(PNG), None, "image/png")
    page = admin_client.get(reverse("admin:tenants_resource_change", args=[resource.pk])).content.decode()
    assert f'src="data:image/png;base64,{base64_encode(PNG)}"' in page


def test_a_file_over_the_cap_or_beside_text_is_refused(admin_client: Client, tenant: Tenant) -> None:
    big = SimpleUploadedFile("big.bin", b"\x00" * (MAX_UPLOAD_BYTES * 2), content_type="application/octet-stream")
    small = SimpleUploadedFile("a.txt", b"plain", content_type="text/plain")
    url = reverse("admin:tenants_resource_add")

    too_big = admin_client.post(
        url, add_form(admin_client, "resource", tenant, uri="docs://a", name="a", blob_file=big)
    )
    beside = admin_client.post(
        url, add_form(admin_client, "resource", tenant, uri="docs://b", name="b", text="typed", blob_file=small)
    )

    assert errors_of(too_big)["blob_file"] == ["The file is 2 MiB; at most 1 MiB can be stored here."]
    assert errors_of(beside)["blob_file"] == ["This resource has text: clear the Text box to store a file instead."]
    assert not Resource.objects.exists()


@pytest.mark.parametrize(
    "content", [{"text": "line\n\nlast\n"}, {"blob": base64_encode(PNG), "mime_type": "image/png"}]
)
def test_a_resource_opens_and_saves_unchanged(admin_client: Client, tenant: Tenant, content: JSONObject) -> None:
    resource = services.resource_create(tenant=tenant, uri="docs://kept", name="kept", **content)
    url = reverse("admin:tenants_resource_change", args=[resource.pk])

    response = admin_client.post(url, form_posted(admin_client.get(url).content.decode(), "resource_form"))

    assert response.status_code == 302, errors_of(response)
    resource.refresh_from_db()
    assert {key: getattr(resource, key) for key in content} == content
