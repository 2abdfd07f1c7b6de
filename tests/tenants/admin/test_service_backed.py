"""Admin edits go through the services: the same validation errors, and catalog notifications after commit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from tenants.backends.python_grants import python_function_grant
from tenants.models import Backend, Membership, Prompt, Resource, Tenant, Tool
from tests.factories import TenantFactory, ToolFactory, UserFactory

pytestmark = pytest.mark.django_db

TOOLS_CHANGED = {"type": "catalog.changed", "kind": "tools"}


def tool_form(tenant: Tenant, **overrides: Any) -> dict[str, Any]:
    data = {
        "tenant": tenant.pk,
        "name": "from_admin",
        "title": "",
        "description": "Made in the admin",
        "input_schema": json.dumps({"type": "object", "properties": {}}),
        "output_schema": "",
        "annotations": "",
        "icons": "",
        "backend": "static",
        "config": json.dumps({"content": [{"type": "text", "text": "hi"}], "isError": False}),
        "task_support": "forbidden",
        "enabled": "on",
    }
    data.update(overrides)
    return data


def test_adding_a_tool_in_the_admin_publishes_a_change(
    admin_client: Any, tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("admin:tenants_tool_add"), tool_form(tenant))

    assert response.status_code == 302
    assert Tool.objects.get(tenant=tenant, name="from_admin").description == "Made in the admin"
    assert listener.receive() == TOOLS_CHANGED


def test_task_support_is_set_in_the_admin_and_refuses_unknown_values(
    admin_client: Any, tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        added = admin_client.post(reverse("admin:tenants_tool_add"), tool_form(tenant, task_support="optional"))
    refused = admin_client.post(reverse("admin:tenants_tool_add"), tool_form(tenant, name="x", task_support="always"))

    assert added.status_code == 302
    assert Tool.objects.get(tenant=tenant, name="from_admin").task_support == "optional"
    assert refused.status_code == 200
    assert "task_support" in refused.context["adminform"].form.errors


def test_admin_shows_service_validation_errors_on_the_form(admin_client: Any, tenant: Tenant) -> None:
    form = tool_form(
        tenant, input_schema=json.dumps({"type": "array"}), config=json.dumps({"content": [{"type": "text"}]})
    )

    response = admin_client.post(reverse("admin:tenants_tool_add"), form)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["input_schema"] == ['The input schema must have "type": "object" at its root.']
    assert errors["config"] == ["content[0]: text content needs a string 'text'."]
    assert not Tool.objects.exists()


def test_changing_a_tool_in_the_admin_updates_through_the_service(
    admin_client: Any, tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    tool = ToolFactory(tenant=tenant, name="from_admin")
    listener = listen(tenant)
    form = tool_form(tenant, description="Changed")
    del form["tenant"]  # read-only once the tool exists

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("admin:tenants_tool_change", args=[tool.pk]), form)

    assert response.status_code == 302
    assert Tool.objects.get(pk=tool.pk).description == "Changed"
    assert listener.receive() == TOOLS_CHANGED


def test_deleting_tools_in_bulk_publishes_for_each(
    admin_client: Any, tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    tools = ToolFactory.create_batch(2, tenant=tenant)
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:tenants_tool_changelist"),
            {"action": "delete_selected", "_selected_action": [t.pk for t in tools], "post": "yes"},
        )

    assert response.status_code == 302
    assert not Tool.objects.exists()
    assert [listener.receive(), listener.receive()] == [TOOLS_CHANGED, TOOLS_CHANGED]


def test_resource_form_treats_an_empty_blob_as_absent(admin_client: Any, tenant: Tenant) -> None:
    form = {
        "tenant": tenant.pk,
        "uri": "docs://readme",
        "name": "readme",
        "title": "",
        "description": "",
        "mime_type": "text/plain",
        "text": "Hello",
        "blob": "",
        "annotations": "",
    }

    response = admin_client.post(reverse("admin:tenants_resource_add"), form)

    assert response.status_code == 302
    assert Resource.objects.get(uri="docs://readme").blob is None


def prompt_form(tenant: Tenant, **overrides: Any) -> dict[str, Any]:
    data = {
        "tenant": tenant.pk,
        "name": "context_prompt",
        "title": "",
        "description": "Asks for context first",
        "arguments": "[]",
        "completions": "{}",
        "messages": "[]",
        "backend": "python",
        "config": json.dumps({"function": "conformance.input_required_prompt"}),
    }
    data.update(overrides)
    return data


def test_a_prompt_backed_by_a_python_function_is_added_in_the_admin(
    admin_client: Any, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # conformance.* functions are reserved for the conformance tenant, which is granted them.
    tenant = TenantFactory(slug="conformance")
    python_function_grant(tenant=tenant, function="conformance.input_required_prompt")
    listener = listen(tenant)
    form = prompt_form(tenant, config="{}", python_function="conformance.input_required_prompt")

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("admin:tenants_prompt_add"), form)

    assert response.status_code == 302
    prompt = Prompt.objects.get(tenant=tenant, name="context_prompt")
    assert (prompt.backend, prompt.config) == (Backend.PYTHON, {"function": "conformance.input_required_prompt"})
    assert listener.receive() == {"type": "catalog.changed", "kind": "prompts"}


def test_the_prompt_form_explains_what_each_backend_needs(admin_client: Any, tenant: Tenant) -> None:
    unknown = prompt_form(tenant, config=json.dumps({"function": "nobody.wrote_this"}), messages='[{"x": 1}]')
    response = admin_client.post(reverse("admin:tenants_prompt_add"), unknown)
    errors = response.context["adminform"].form.errors
    assert errors["config"][0].startswith("No Python prompt function named 'nobody.wrote_this' is registered")
    assert errors["messages"] == ["A Python prompt's messages come from its function: leave them empty."]

    static = prompt_form(tenant, backend="static", config=json.dumps({"function": "x"}), messages="[]")
    errors = admin_client.post(reverse("admin:tenants_prompt_add"), static).context["adminform"].form.errors
    assert errors["config"] == ["A static prompt takes no config: its messages are the prompt."]
    assert errors["messages"] == ["Messages must be a non-empty list of {role, content} objects."]
    assert not Prompt.objects.exists()


def test_tenant_admin_manages_memberships_inline(admin_client: Any) -> None:
    user = UserFactory()
    form = {
        "slug": "initech",
        "name": "Initech",
        "status": "active",
        "allowed_origins": json.dumps(["https://initech.example"]),
        "instructions": "",
        "memberships-TOTAL_FORMS": "1",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
        "memberships-0-person": user.username,
        "memberships-0-role": "owner",
    }

    response = admin_client.post(reverse("admin:tenants_tenant_add"), form)

    assert response.status_code == 302
    tenant = Tenant.objects.get(slug="initech")
    assert tenant.allowed_origins == ["https://initech.example"]
    assert list(Membership.objects.filter(tenant=tenant).values_list("user_id", "role")) == [(user.pk, "owner")]


@pytest.mark.parametrize("model", ["tenant", "membership", "tool", "resource", "resourcetemplate", "prompt", "secret"])
def test_admin_pages_render(admin_client: Any, tenant: Tenant, model: str) -> None:
    ToolFactory(tenant=tenant)

    assert admin_client.get(reverse(f"admin:tenants_{model}_changelist"), {"q": "a"}).status_code == 200
    assert admin_client.get(reverse(f"admin:tenants_{model}_add")).status_code == 200


def test_tool_change_page_renders_with_tenant_read_only(admin_client: Any, tenant: Tenant) -> None:
    tool = ToolFactory(tenant=tenant)

    response = admin_client.get(reverse("admin:tenants_tool_change", args=[tool.pk]))

    assert response.status_code == 200
    assert "tenant" not in response.context["adminform"].form.fields
