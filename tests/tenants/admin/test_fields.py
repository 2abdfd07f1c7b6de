"""The catalog admin keeps what people type: optional JSON empty rather than null, text with the newlines typed,
help texts with their placeholders."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tenants.models import Resource, Tenant
from tests.factories import ResourceFactory, ToolFactory

pytestmark = pytest.mark.django_db


def test_optional_json_fields_are_empty_not_null(admin_client: Any, tenant: Tenant) -> None:
    tool = ToolFactory(tenant=tenant, output_schema=None, annotations=None)

    form = admin_client.get(reverse("admin:tenants_tool_change", args=[tool.pk])).context["adminform"].form

    assert form["output_schema"].value() in ("", None)
    assert ">null</textarea>" not in str(form["output_schema"]) and ">null</textarea>" not in str(form["annotations"])
    assert ">\n</textarea>" in str(form["output_schema"])


def test_text_is_stored_with_the_newlines_typed(admin_client: Any, tenant: Tenant) -> None:
    resource = ResourceFactory(tenant=tenant, uri="docs://typed", name="typed", text="old")
    form = {
        "uri": "docs://typed",
        "name": "typed",
        "title": "",
        "description": "Two\r\nlines",
        "mime_type": "text/plain",
        "text": "first line\r\nsecond line\r\n",
        "blob": "",
        "annotations": "",
        "icons": "",
        "meta": "",
    }

    response = admin_client.post(reverse("admin:tenants_resource_change", args=[resource.pk]), form)

    assert response.status_code == 302, response.context["adminform"].form.errors
    stored = Resource.objects.get(pk=resource.pk)
    assert stored.text == "first line\nsecond line\n"
    assert stored.description == "Two\nlines"


def test_help_texts_show_their_placeholders(admin_client: Any) -> None:
    page = admin_client.get(reverse("admin:tenants_tenant_add")).content.decode()

    assert "/t/&lt;slug&gt;/mcp" in page
