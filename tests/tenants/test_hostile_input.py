"""Hostile input in the admin, as a tenant owner: URIs whose brackets hold no IPv6 address and JSON nested a hundred
thousand levels deep are form errors (never a 500), and the schema-check endpoint answers them with an error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from tenants.models import Resource, Tenant, Tool, Upstream
from tests.factories import MembershipFactory, UserFactory
from tests.tenants.admin.test_service_backed import tool_form

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000
BRACKETED = "x://[x]"


@pytest.fixture
def owner(tenant: Tenant) -> Client:
    """The tenant's owner (through a membership, no staff flag), signed in."""
    user = UserFactory(username="olivia")
    MembershipFactory(tenant=tenant, user=user, role="owner")
    browser = Client(raise_request_exception=False)
    browser.force_login(user)
    return browser


def errors_of(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.status_code
    return dict(response.context["adminform"].form.errors)


def resource_form(tenant: Tenant, **overrides: Any) -> dict[str, Any]:
    return {
        "tenant": tenant.pk,
        "uri": "docs://readme",
        "name": "readme",
        "title": "",
        "description": "",
        "mime_type": "text/plain",
        "text": "Hello",
        "blob": "",
        "annotations": "",
        **overrides,
    }


def test_a_resource_uri_whose_brackets_hold_no_address_is_a_form_error(owner: Client, tenant: Tenant) -> None:
    errors = errors_of(owner.post(reverse("admin:tenants_resource_add"), resource_form(tenant, uri=BRACKETED)))

    assert errors["uri"] == ["'x://[x]' is not a URI: brackets in its host must hold an IPv6 address."]
    assert not Resource.objects.exists()


def test_json_nested_too_deeply_is_a_form_error_in_every_json_box(owner: Client, tenant: Tenant) -> None:
    tool = owner.post(reverse("admin:tenants_tool_add"), tool_form(tenant, input_schema=DEEP, config=DEEP))
    resource = owner.post(reverse("admin:tenants_resource_add"), resource_form(tenant, annotations=DEEP))

    deep = ["The JSON is nested deeper than 64 levels."]
    assert errors_of(tool)["input_schema"] == deep and errors_of(tool)["config"] == deep
    assert errors_of(resource)["annotations"] == deep
    assert not Tool.objects.exists() and not Resource.objects.exists()


def test_sixty_four_levels_are_still_accepted(owner: Client, tenant: Tenant) -> None:
    schema = {"type": "object", "properties": {"x": json.loads("[" * 62 + "]" * 62)}}

    response = owner.post(reverse("admin:tenants_tool_add"), tool_form(tenant, input_schema=json.dumps(schema)))

    # Deep but legal JSON reaches the schema rules, which say what is wrong with it.
    assert "nested deeper" not in str(errors_of(response).get("input_schema"))


def test_the_schema_check_answers_deep_nesting_with_an_error(owner: Client) -> None:
    url = reverse("admin:tenants_tool_schema_check")

    in_the_draft = owner.post(url, json.dumps({"field": "input_schema", "text": DEEP}), "application/json")
    in_the_request = owner.post(url, '{"field": "input_schema", "text": "{}", "x": ' + DEEP, "application/json")

    assert in_the_draft.status_code == 200
    assert in_the_draft.json() == {"errors": ["The input schema: The JSON is nested deeper than 64 levels."]}
    assert in_the_request.status_code == 400
    assert in_the_request.json() == {"errors": ["The JSON is nested deeper than 64 levels."]}


def test_allowed_origins_whose_brackets_hold_no_address_are_a_form_error(owner: Client, tenant: Tenant) -> None:
    form = {
        "slug": tenant.slug,
        "name": tenant.name,
        "allowed_origins": json.dumps(["http://[x]"]),
        "instructions": "",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }

    response = owner.post(reverse("admin:tenants_tenant_change", args=[tenant.pk]), form)

    assert errors_of(response)["allowed_origins"] == ["'http://[x]' is not an origin (scheme://host[:port])."]


def test_an_upstream_url_whose_brackets_hold_no_address_is_refused_by_the_command(tenant: Tenant) -> None:
    with pytest.raises(CommandError) as refused:
        call_command("upstream_add", tenant.slug, "docs", "https://[x]/mcp")

    assert "was not added" in str(refused.value) and "The URL must start with https://" in str(refused.value)
    assert not Upstream.objects.exists()


def test_an_http_tools_token_url_whose_brackets_hold_no_address_is_a_form_error(owner: Client, tenant: Tenant) -> None:
    config = {
        "method": "GET",
        "url": "https://api.example/items",
        "auth": {"type": "client_credentials", "secret": "api", "client_id": "me", "token_url": "https://[x"},
    }

    response = owner.post(
        reverse("admin:tenants_tool_add"), tool_form(tenant, backend="http", config=json.dumps(config))
    )

    assert '"token_url": an http(s) URL' in " ".join(errors_of(response)["config"])
