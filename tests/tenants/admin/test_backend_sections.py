"""The tool form follows the backend: each backend's section saves the config a JSON author would write, a Python
tool gets its schema from the function's signature, the secrets and functions a config names must exist at save,
mirrored and imported tools keep what their source sets, and a secret's page says what uses it."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tenants import services
from tenants.backends.python_grants import python_function_grant
from tenants.catalog import tool_wire
from tenants.models import OpenApiSource, Secret, Tenant, Tool, Upstream
from tenants.secrets import secret_set
from tests.tenants.admin.page_forms import form_posted, with_values

pytestmark = pytest.mark.django_db

HTTP_CONFIG = {
    "method": "POST",
    "url": "https://api.example/pets/{id}{?verbose}",
    "query": {"limit": "limit"},
    "headers": {"X-Trace": "trace"},
    "static_headers": {"Accept": "application/json"},
    "body": {"arguments": ["name", "tag"]},
    "auth": {"type": "header", "name": "X-API-Key", "secret": "pets-key"},
    "timeout": 12.5,
}
HTTP_SCHEMA = {
    "type": "object",
    "properties": {n: {"type": "string"} for n in ("id", "verbose", "limit", "trace", "name", "tag")},
}


def base_form(tenant: Tenant, **overrides: Any) -> dict[str, Any]:
    """The add form as a browser posts it with every section on the page (the markers say so)."""
    data: dict[str, Any] = {
        "tenant": tenant.pk,
        "name": "made_here",
        "title": "",
        "description": "",
        "backend": "static",
        "python_section": "1",
        "python_function": "",
        "static_section": "1",
        "static_blocks_0_kind": "text",
        "static_blocks_0_text": "",
        "http_section": "1",
        "http_method": "GET",
        "http_url": "",
        "http_query": "",
        "http_headers": "",
        "http_static_headers": "",
        "http_body_kind": "",
        "http_body_arguments": "",
        "http_timeout": "",
        "http_auth_type": "",
        "http_auth_secret": "",
        "http_auth_name": "",
        "http_auth_client_id": "",
        "http_auth_token_url": "",
        "http_auth_scope": "",
        "input_schema": json.dumps({"type": "object"}),
        "output_schema": "",
        "details_section": "1",
        "annotation_title": "",
        "annotation_read_only": "unknown",
        "annotation_destructive": "unknown",
        "annotation_idempotent": "unknown",
        "annotation_open_world": "unknown",
        "icon_rows_src": [""],
        "icon_rows_mimeType": [""],
        "icon_rows_sizes": [""],
        "icon_rows_theme": [""],
        "task_support": "forbidden",
        "enabled": "on",
        "required_scopes": "",
        "config": "",
        "annotations": "",
        "icons": "",
    }
    data.update(overrides)
    return data


def errors_of(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 200, response.status_code
    return {k: list(v) for k, v in response.context["adminform"].form.errors.items()}


def test_a_python_tool_gets_the_input_schema_of_its_functions_signature(owner: Client, tenant: Tenant) -> None:
    python_function_grant(tenant=tenant, function="demo.count_slowly")

    response = owner.post(
        reverse("admin:tenants_tool_add"),
        base_form(tenant, name="count", backend="python", python_function="demo.count_slowly"),
    )

    assert response.status_code == 302, errors_of(response)
    tool = Tool.objects.get(tenant=tenant, name="count")
    assert tool.config == {"function": "demo.count_slowly"}
    assert tool_wire(tool)["inputSchema"] == {
        "type": "object",
        "properties": {"steps": {"type": "integer", "default": 5}, "delay_ms": {"type": "integer", "default": 500}},
    }


def test_a_schema_written_by_hand_is_kept_and_the_add_form_shows_the_signature(owner: Client, tenant: Tenant) -> None:
    python_function_grant(tenant=tenant, function="demo.count_slowly")
    schema = {"type": "object", "properties": {"steps": {"type": "integer", "maximum": 10}}}

    page = owner.get(reverse("admin:tenants_tool_add")).content.decode()
    owner.post(
        reverse("admin:tenants_tool_add"),
        base_form(
            tenant, name="count", backend="python", python_function="demo.count_slowly", input_schema=json.dumps(schema)
        ),
    )

    assert "demo.count_slowly(steps: int = 5, delay_ms: int = 500)" in page
    assert Tool.objects.get(tenant=tenant, name="count").input_schema == schema


def test_a_new_function_brings_its_schema_in_place_of_the_one_made_from_the_previous(
    owner: Client, tenant: Tenant
) -> None:
    for function in ("demo.count_slowly", "demo.echo"):
        python_function_grant(tenant=tenant, function=function)
    owner.post(
        reverse("admin:tenants_tool_add"),
        base_form(tenant, name="count", backend="python", python_function="demo.count_slowly"),
    )
    tool = Tool.objects.get(tenant=tenant, name="count")
    url = reverse("admin:tenants_tool_change", args=[tool.pk])

    posted = form_posted(owner.get(url).content.decode(), "tool_form")
    response = owner.post(url, with_values(posted, python_function="demo.echo"))

    assert response.status_code == 302, errors_of(response)
    tool.refresh_from_db()
    assert tool.config == {"function": "demo.echo"}
    assert tool.input_schema == {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    }
    written = {"type": "object", "properties": {"message": {"type": "string", "maxLength": 80}}}
    posted = form_posted(owner.get(url).content.decode(), "tool_form")
    owner.post(url, with_values(posted, input_schema=json.dumps(written)))
    posted = form_posted(owner.get(url).content.decode(), "tool_form")
    owner.post(url, with_values(posted, python_function="demo.count_slowly"))
    tool.refresh_from_db()
    assert (tool.config, tool.input_schema) == ({"function": "demo.count_slowly"}, written), "written by hand: kept"


def test_the_form_carries_the_schema_of_each_granted_function_and_of_no_other(
    owner: Client, tenant: Tenant, other_tenant: Tenant
) -> None:
    python_function_grant(tenant=tenant, function="demo.echo")
    python_function_grant(tenant=other_tenant, function="demo.add")

    page = owner.get(reverse("admin:tenants_tool_add")).content.decode()

    carried = dict(re.findall(r'data-python-function="([^"]+)" data-input-schema="([^"]*)"', page))
    assert list(carried) == ["demo.echo"]
    assert json.loads(html.unescape(carried["demo.echo"]))["required"] == ["message"]


def test_a_static_tool_is_written_as_text_blocks(owner: Client, tenant: Tenant) -> None:
    blocks = {f"static_blocks_{i}_text": text for i, text in enumerate(["First block", "", "Second\r\nblock"])}
    response = owner.post(
        reverse("admin:tenants_tool_add"),
        base_form(tenant, **blocks, annotation_read_only="true"),
    )

    assert response.status_code == 302, errors_of(response)
    tool = Tool.objects.get(tenant=tenant, name="made_here")
    assert tool.config == {
        "content": [{"type": "text", "text": "First block"}, {"type": "text", "text": "Second\nblock"}]
    }
    assert tool.annotations == {"readOnlyHint": True}


def test_an_http_tool_names_a_secret_the_tenant_has(owner: Client, tenant: Tenant) -> None:
    form = base_form(
        tenant,
        name="pets",
        backend="http",
        input_schema=json.dumps(HTTP_SCHEMA),
        http_method="POST",
        http_url=HTTP_CONFIG["url"],
        http_query="limit = limit",
        http_headers="X-Trace = trace",
        http_static_headers="Accept = application/json",
        http_body_kind="arguments",
        http_body_arguments="name, tag",
        http_timeout="12.5",
        http_auth_type="header",
        http_auth_secret="pets-key",
        http_auth_name="X-API-Key",
    )

    missing = owner.post(reverse("admin:tenants_tool_add"), form)
    assert errors_of(missing) == {
        "http_auth_secret": [
            "There is no secret 'pets-key' in acme: add it under Secrets first, or pick one of its secrets."
        ]
    }
    assert 'value="pets-key" selected' in missing.content.decode()  # what was picked is kept on the page
    secret_set(tenant=tenant, name="pets-key", value="s3cret-value")
    saved = owner.post(reverse("admin:tenants_tool_add"), form)

    assert saved.status_code == 302, errors_of(saved)
    assert Tool.objects.get(tenant=tenant, name="pets").config == HTTP_CONFIG


def test_the_secret_picker_offers_only_the_persons_tenants_secrets_and_never_values(
    owner: Client, tenant: Tenant, other_tenant: Tenant
) -> None:
    secret_set(tenant=tenant, name="ours-key", value="our-value-123")
    secret_set(tenant=other_tenant, name="theirs-key", value="their-value-456")

    page = owner.get(reverse("admin:tenants_tool_add")).content.decode()

    assert '<option value="ours-key">ours-key</option>' in page
    assert "theirs-key" not in page and "our-value-123" not in page


def test_another_tenants_secret_cannot_be_named(owner: Client, tenant: Tenant, other_tenant: Tenant) -> None:
    secret_set(tenant=other_tenant, name="theirs-key", value="their-value-456")
    form = base_form(
        tenant,
        backend="http",
        http_url="https://api.example/",
        http_auth_type="bearer",
        http_auth_secret="theirs-key",
    )

    assert "http_auth_secret" in errors_of(owner.post(reverse("admin:tenants_tool_add"), form))
    assert not Tool.objects.exists()


def test_an_existing_http_tool_opens_in_the_fields_and_saves_unchanged(admin_client: Client, tenant: Tenant) -> None:
    secret_set(tenant=tenant, name="pets-key", value="s3cret-value")
    tool = services.tool_create(
        tenant=tenant, name="pets", backend="http", config=HTTP_CONFIG, input_schema=HTTP_SCHEMA
    )
    url = reverse("admin:tenants_tool_change", args=[tool.pk])

    page = admin_client.get(url)
    form = page.context["adminform"].form
    response = admin_client.post(url, form_posted(page.content.decode(), "tool_form"))

    assert response.status_code == 302, errors_of(response)
    assert form.initial["config"] is None  # nothing left for Advanced (JSON)
    assert form.initial["http_body_arguments"] == "name, tag"
    tool.refresh_from_db()
    assert tool.config == HTTP_CONFIG


def test_the_backend_choice_offers_no_upstream(owner: Client, tenant: Tenant) -> None:
    page = owner.get(reverse("admin:tenants_tool_add")).content.decode()
    refused = owner.post(reverse("admin:tenants_tool_add"), base_form(tenant, backend="upstream"))

    assert re.search(r'<option value="upstream"', page) is None
    assert "backend" in errors_of(refused)


def test_a_mirrored_tool_keeps_what_its_upstream_sets(owner: Client, tenant: Tenant) -> None:
    upstream = Upstream.objects.create(tenant=tenant, name="docs", url="https://docs.example/mcp")
    remote = {"remote": {"name": "search"}, "mirrored": {}}
    tool = Tool.objects.create(
        tenant=tenant, name="docs_search", backend="upstream", config=remote, upstream=upstream, description="Find"
    )
    url = reverse("admin:tenants_tool_change", args=[tool.pk])

    page = owner.get(url)
    form = page.context["adminform"].form
    response = owner.post(
        url,
        {
            "name": "docs_find",
            "title": "",
            "description": "Find pages",
            "enabled": "on",
            "task_support": "forbidden",
            "required_scopes": "",
            "config": json.dumps({"remote": {"name": "other"}}),
            "backend": "static",
        },
    )

    assert set(form.fields) >= {"name", "description", "enabled"}
    assert not {"config", "backend", "input_schema"} & set(form.fields)
    assert response.status_code == 302, errors_of(response)
    tool.refresh_from_db()
    assert (tool.name, tool.description, tool.backend, tool.config) == ("docs_find", "Find pages", "upstream", remote)


def test_a_secret_shows_what_uses_it_and_deleting_it_names_them_first(owner: Client, tenant: Tenant) -> None:
    secret_set(tenant=tenant, name="pets-key", value="s3cret-value")
    services.tool_create(tenant=tenant, name="pets", backend="http", config=HTTP_CONFIG, input_schema=HTTP_SCHEMA)
    Upstream.objects.create(
        tenant=tenant, name="docs", url="https://docs.example/mcp", auth={"type": "bearer", "secret": "pets-key"}
    )
    secret = Secret.objects.get(tenant=tenant, name="pets-key")

    page = owner.get(reverse("admin:tenants_secret_change", args=[secret.pk])).content.decode()
    confirm = owner.get(reverse("admin:tenants_secret_delete", args=[secret.pk])).content.decode()
    bulk = owner.post(
        reverse("admin:tenants_secret_changelist"), {"action": "delete_selected", "_selected_action": [secret.pk]}
    ).content.decode()

    for shown in (page, confirm, bulk):
        assert ">pets</a>" in shown and ">docs</a>" in shown and "s3cret-value" not in shown
    assert "deleting it makes their calls fail" in confirm and "deleting it makes their calls fail" in bulk
    deleted = owner.post(reverse("admin:tenants_secret_delete", args=[secret.pk]), {"post": "yes"})
    assert deleted.status_code == 302 and not Secret.objects.exists()


def test_an_unused_secret_says_so_and_another_tenants_secret_is_a_404(
    owner: Client, tenant: Tenant, other_tenant: Tenant
) -> None:
    secret_set(tenant=tenant, name="spare", value="spare-value")
    secret_set(tenant=other_tenant, name="theirs", value="their-value")
    ours = Secret.objects.get(name="spare")
    theirs = Secret.objects.get(name="theirs")

    page = owner.get(reverse("admin:tenants_secret_change", args=[ours.pk])).content.decode()

    assert "Nothing names this secret." in page
    assert owner.get(reverse("admin:tenants_secret_change", args=[theirs.pk])).status_code == 404
    assert owner.get(reverse("admin:tenants_secret_delete", args=[theirs.pk])).status_code == 404


def test_a_python_function_not_granted_is_refused_at_save(owner: Client, tenant: Tenant) -> None:
    response = owner.post(
        reverse("admin:tenants_tool_add"), base_form(tenant, backend="python", python_function="demo.count_slowly")
    )

    assert "python_function" in errors_of(response)
    assert "demo.count_slowly" in " ".join(errors_of(response)["python_function"])


def test_without_script_every_section_is_on_the_page(owner: Client) -> None:
    page = owner.get(reverse("admin:tenants_tool_add")).content.decode()

    for backend in ("python", "static", "http"):
        assert re.search(rf'<fieldset class="[^"]*backend-section-{backend}[^"]*"(?![^>]*hidden)', page), backend
    assert "admin-backend-sections.js" in page


def test_an_imported_tool_offers_only_what_an_import_keeps(owner: Client, tenant: Tenant) -> None:
    source = OpenApiSource.objects.create(
        tenant=tenant, name="Pets", location="https://pets.example/openapi.json", imported_at=timezone.now()
    )
    tool = Tool.objects.create(
        tenant=tenant,
        name="get_pet",
        backend="http",
        config={"url": "https://pets.example/pets"},
        openapi_source=source,
    )

    form = owner.get(reverse("admin:tenants_tool_change", args=[tool.pk])).context["adminform"].form

    assert {"enabled", "task_support", "required_scopes"} <= set(form.fields)
    assert not {"name", "description", "config", "backend", "input_schema", "annotations", "icons"} & set(form.fields)
