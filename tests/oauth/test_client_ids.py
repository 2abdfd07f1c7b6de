"""Client ids: an admin-made client gets a generated id it cannot change, and a URL-shaped id belongs to the client
metadata document it names, for every tenant, whatever an admin typed before."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from mcp_platform.oauth.models import TenantApplication
from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, UserFactory
from tests.https_documents import DocumentServer
from tests.oauth.conftest import BASE
from tests.oauth.flow import REDIRECT, tokens

DOCUMENT = "/oauth/client-metadata.json"
GLOBEX_MCP = f"{BASE}/t/globex/mcp"


def owner_of(tenant: Any, username: str) -> Client:
    """A tenant owner (through a membership, no staff flag), signed in to the admin."""
    user = UserFactory(username=username)
    MembershipFactory(tenant=tenant, user=user, role="owner")
    browser = Client()
    browser.force_login(user)
    return browser


def client_form(tenant: Any, **overrides: Any) -> dict[str, Any]:
    return {
        "tenant": tenant.pk,
        "name": "Acme's Claude",
        "client_type": "public",
        "authorization_grant_type": "authorization-code",
        "redirect_uris": REDIRECT,
        "algorithm": "",
        **overrides,
    }


def test_an_admin_made_client_gets_a_generated_id_whatever_the_form_posts(acme: Any) -> None:
    owner = owner_of(acme, "olivia")

    added = owner.post(
        reverse("admin:oauth_tenantapplication_add"),
        client_form(acme, client_id="https://claude.example/oauth/client-metadata.json"),
    )

    assert added.status_code == 302, added.context["adminform"].form.errors
    client = TenantApplication.objects.get(name="Acme's Claude")
    assert client.tenant == acme and client.registration_source == "manual"
    assert ":" not in client.client_id and len(client.client_id) == 40
    assert "client_id" not in owner.get(reverse("admin:oauth_tenantapplication_add")).context["adminform"].form.fields


def test_a_clients_id_is_shown_read_only_and_a_posted_one_is_ignored(acme: Any) -> None:
    owner = owner_of(acme, "olivia")
    client = OAuthClientFactory(name="Acme desktop", tenant=acme, redirect_uris=REDIRECT)
    generated = client.client_id
    url = reverse("admin:oauth_tenantapplication_change", args=[client.pk])

    page = owner.get(url)
    changed = owner.post(url, client_form(acme, name="Acme laptop", client_id="https://claude.example/c.json"))

    assert "client_id" not in page.context["adminform"].form.fields
    assert generated in page.content.decode()
    assert changed.status_code == 302, changed.context["adminform"].form.errors
    client.refresh_from_db()
    assert (client.name, client.client_id) == ("Acme laptop", generated)


def test_a_metadata_document_client_works_for_every_tenant_after_an_admin_typed_its_url(
    acme: Any, globex: Any, documents: DocumentServer, loopback_documents_trusted: None
) -> None:
    client_id = documents.client_document(DOCUMENT, [REDIRECT], client_name="Claude")
    acme_owner = owner_of(acme, "olivia")
    acme_owner.post(reverse("admin:oauth_tenantapplication_add"), client_form(acme, client_id=client_id))
    globex_member = UserFactory(username="gus")
    MembershipFactory(tenant=globex, user=globex_member)
    browser = Client()
    browser.force_login(globex_member)

    issued = tokens(browser, client_id, resource=GLOBEX_MCP)

    assert issued["token_type"] == "Bearer"
    described = TenantApplication.objects.get(client_id=client_id)
    assert described.registration_source == "cimd" and described.tenant is None and described.name == "Claude"
    assert TenantApplication.objects.get(name="Acme's Claude").client_id != client_id


def test_staff_cannot_bind_a_metadata_document_client_to_one_tenant(acme: Any) -> None:
    document_client = OAuthClientFactory(
        client_id="https://claude.example/c.json", registration_source="cimd", redirect_uris=REDIRECT
    )
    staff = Client()
    staff.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))

    refused = staff.post(
        reverse("admin:oauth_tenantapplication_change", args=[document_client.pk]),
        client_form(acme, name="Claude", user=""),
    )

    assert refused.status_code == 200
    assert "serves every workspace" in str(refused.context["adminform"].form.errors["tenant"])
    document_client.refresh_from_db()
    assert document_client.tenant is None


@pytest.mark.parametrize(
    "fields",
    [
        {"registration_source": "manual"},
        {"registration_source": "dcr"},
        {"registration_source": "cimd", "tenant": "acme"},
    ],
)
def test_the_database_keeps_url_ids_for_unbound_metadata_document_clients(acme: Any, fields: dict[str, Any]) -> None:
    values = {**fields, "tenant": acme if fields.get("tenant") else None}
    with pytest.raises(IntegrityError), transaction.atomic():
        OAuthClientFactory(client_id="https://claude.example/c.json", **values)


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_url_ids_an_admin_typed_back_to_their_documents() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("oauth", "0004_consumed_authorization_codes")])
    try:
        old = executor.loader.project_state([("oauth", "0004_consumed_authorization_codes")]).apps
        tenant = TenantFactory(slug="acme")
        clients = old.get_model("oauth", "TenantApplication").objects
        # What rows written before the constraint could hold.
        for name, client_id, source, bound in [
            ("typed", "https://claude.example/c.json", "manual", True),
            ("bound", "https://zed.example/c.json", "cimd", True),
            ("document", "https://cursor.example/c.json", "cimd", False),
            ("ordinary", "a1b2c3", "manual", True),
        ]:
            clients.create(
                name=name,
                client_id=client_id,
                registration_source=source,
                tenant_id=tenant.pk if bound else None,
                client_type="public",
                authorization_grant_type="authorization-code",
            )
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

    rows = {c.name: c for c in TenantApplication.objects.all()}
    assert ":" not in rows["typed"].client_id and ":" not in rows["bound"].client_id
    assert rows["typed"].registration_source == rows["bound"].registration_source == "manual"
    assert rows["bound"].tenant_id == tenant.pk and rows["ordinary"].client_id == "a1b2c3"
    assert rows["document"].client_id == "https://cursor.example/c.json"
    assert rows["document"].registration_source == "cimd"
