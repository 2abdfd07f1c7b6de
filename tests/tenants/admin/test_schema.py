"""The schema editor's draft check: what it answers is what saving the tool answers for that field, only to people
who may edit tools, within size limits; and the tool form's schema fields carry the editor."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tenants.admin.schema import MAX_DRAFT_BYTES
from tenants.models import Tenant
from tests.factories import MembershipFactory, UserFactory
from tests.tenants.admin.test_service_backed import tool_form

pytestmark = pytest.mark.django_db

CHECK = "admin:tenants_tool_schema_check"
DRAFTS = [
    ("input_schema", json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})),
    ("input_schema", json.dumps({"type": "array"})),
    ("input_schema", json.dumps({"type": "object", "properties": {"n": {"type": "integr"}}})),
    ("input_schema", json.dumps({"type": "object", "properties": {"s": {"type": "string", "pattern": "(["}}})),
    ("input_schema", '{"type": "object",}'),
    ("input_schema", ""),
    ("output_schema", ""),
    ("output_schema", json.dumps({"type": "object", "required": "all"})),
]


@pytest.fixture
def tenant_admin(client: Client, tenant: Tenant, settings: Any) -> Client:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    user = UserFactory(username="ada")
    MembershipFactory(tenant=tenant, user=user, role="admin")
    client.force_login(user)
    return client


def check(client: Client, field: str, text: str) -> Any:
    return client.post(reverse(CHECK), json.dumps({"field": field, "text": text}), content_type="application/json")


@pytest.mark.parametrize(("field", "text"), DRAFTS)
def test_the_draft_check_says_what_saving_says(tenant_admin: Client, tenant: Tenant, field: str, text: str) -> None:
    saved = tenant_admin.post(reverse("admin:tenants_tool_add"), tool_form(tenant, **{field: text}))
    on_save = saved.context["adminform"].form.errors.get(field, []) if saved.status_code == 200 else []

    answer = check(tenant_admin, field, text)

    assert answer.status_code == 200
    assert [message.removeprefix(f"{label(field)}: ") for message in answer.json()["errors"]] == list(on_save)


def label(field: str) -> str:
    return {"input_schema": "The input schema", "output_schema": "The output schema"}[field]


def test_an_invalid_schema_is_named_and_a_valid_one_passes(tenant_admin: Client) -> None:
    wrong = check(tenant_admin, "input_schema", json.dumps({"type": "object", "properties": {"n": {"type": 5}}}))
    right = check(tenant_admin, "input_schema", json.dumps({"type": "object"}))

    assert wrong.json()["errors"] == [
        "The input schema is not a valid JSON Schema (at properties/n/type): 5 is not valid under any of the given "
        "schemas"
    ]
    assert right.json() == {"errors": []}


def test_malformed_oversized_and_read_requests_are_refused(tenant_admin: Client) -> None:
    url = reverse(CHECK)
    huge = json.dumps({"type": "object", "description": "x" * MAX_DRAFT_BYTES})

    assert tenant_admin.get(url).status_code == 405
    assert tenant_admin.post(url, "not json", content_type="application/json").status_code == 400
    assert check(tenant_admin, "config", "{}").status_code == 400
    assert tenant_admin.post(url, {"field": "input_schema"}, content_type="application/json").status_code == 400
    assert check(tenant_admin, "input_schema", huge).status_code == 413


def test_only_people_who_administer_a_tenant_reach_the_check(client: Client, tenant: Tenant) -> None:
    member = UserFactory(username="mo")
    MembershipFactory(tenant=tenant, user=member, role="member")

    anonymous = check(client, "input_schema", "{}")
    client.force_login(member)
    plain_member = check(client, "input_schema", "{}")

    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    assert plain_member.status_code == 302 and "/admin/login/" in plain_member["Location"]


def test_the_tool_form_gives_both_schemas_the_editor(tenant_admin: Client) -> None:
    page = tenant_admin.get(reverse("admin:tenants_tool_add")).content.decode()

    assert 'data-schema-editor="input_schema"' in page and 'data-schema-editor="output_schema"' in page
    assert f'data-schema-check-url="{reverse(CHECK)}"' in page
    assert "vendor/codemirror/lib/codemirror.js" in page and "admin-schema-editor.js" in page
