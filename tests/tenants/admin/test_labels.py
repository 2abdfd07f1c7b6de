"""Field labels on the admin's forms and lists spell acronyms as people write them: URL, URI, MIME, OpenAPI."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from tenants.models import OpenApiSource, Tenant

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("page", "labels"),
    [
        ("admin:tenants_upstream_add", ["URL:"]),
        ("admin:tenants_resource_add", ["URI:", "MIME type:"]),
        ("admin:tenants_resourcetemplate_add", ["URI template:", "MIME type:"]),
        ("admin:tenants_tenant_add", ["Cache TTL (ms):"]),
    ],
)
def test_add_forms_label_acronyms_in_capitals(admin_client: Any, tenant: Tenant, page: str, labels: list[str]) -> None:
    html = admin_client.get(reverse(page)).content.decode()

    for label in labels:
        assert f">{label}</label>" in html, label
    for wrong in ("Url:", "Uri:", "Uri template:", "Mime type:", "Cache ttl"):
        assert wrong not in html


def test_the_tool_list_filters_by_openapi_source(admin_client: Any, tenant: Tenant) -> None:
    OpenApiSource.objects.create(
        tenant=tenant,
        name="Pets",
        location="https://pets.example/openapi.json",
        document_sha256="0" * 64,
        imported_at=timezone.now(),
    )

    html = admin_client.get(reverse("admin:tenants_tool_changelist")).content.decode()

    assert "By OpenAPI source" in html
    assert "By openapi source" not in html


def test_the_openapi_import_form_labels_client_id_and_base_url(admin_client: Any, tenant: Tenant) -> None:
    html = admin_client.get(reverse("admin:tenants_openapisource_import")).content.decode()

    assert ">Client ID:</label>" in html
    assert ">Base URL:</label>" in html
