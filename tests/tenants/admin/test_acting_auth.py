"""The "Acts as" fields of the forms that configure authentication: each personal kind read from a stored config and
written back unchanged, the fields each kind needs (refusals on the field they are about), machine clients refused or
given the shared credentials; on an HTTP tool's section and on an upstream's page, opened and saved as they were."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from tenants import services
from tenants.admin.acting_auth import acting_fits, acting_join, acting_split
from tenants.admin.backend_forms.http import http_config_join, http_config_split
from tenants.models import ConnectLink, Tenant, Tool, Upstream
from tenants.outbound_auth import auth_errors
from tenants.secrets import secret_set
from tests.tenants.admin.page_forms import form_posted, with_values
from tests.tenants.admin.test_backend_sections import base_form, errors_of

SHARED = {"type": "bearer", "secret": "shared-token"}
PERSONAL = [
    {
        "type": "user_oauth",
        "issuer": "https://as.example",
        "client": "manual",
        "client_id": "platform-client",
        "secret": "oauth-client-secret",
        "scope": "read write",
        "resource": "https://api.example/",
    },
    {
        "type": "user_oauth",
        "authorization_endpoint": "https://as.example/authorize",
        "token_endpoint": "https://as.example/token",
        "revocation_endpoint": "https://as.example/revoke",
        "client": "metadata_document",
        "machine": SHARED,
    },
    {"type": "user_key", "placement": "header", "name": "X-Key", "label": "Weather API key"},
    {"type": "user_key", "placement": "bearer", "label": "API key", "machine": SHARED},
    {
        "type": "token_exchange",
        "client_id": "exchanger",
        "secret": "exchange-secret",
        "audience": "https://billing.example/api",
        "scope": "invoices",
    },
]


@pytest.mark.parametrize("config", PERSONAL, ids=lambda c: f"{c['type']}{'+machine' if 'machine' in c else ''}")
def test_a_personal_config_splits_into_the_fields_and_joins_back_as_written(config: dict[str, Any]) -> None:
    assert auth_errors(config) == [] and acting_fits(config)

    values, shared = acting_split(config, "p_")

    assert values["p_acts_as"] == config["type"]
    assert values["p_machine"] == ("shared" if "machine" in config else "refused")
    assert shared == config.get("machine")
    assert acting_join(values, shared, "p_", upstream=False) == config


def test_the_tenant_acting_keeps_the_shared_config_and_ignores_the_person_fields() -> None:
    values, shared = acting_split(SHARED, "")
    assert values == {"acts_as": "tenant", "machine": "refused"} and shared == SHARED
    assert acting_join({**values, "person_issuer": "https://as.example"}, SHARED, "", upstream=False) == SHARED
    assert acting_join({}, None, "", upstream=False) is None


def refusal(values: dict[str, Any], shared: Any = None, *, upstream: bool = False) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        acting_join(values, shared, "", upstream=upstream)
    return caught.value.message_dict


def test_each_kind_is_refused_without_what_it_needs_on_the_field_it_needs() -> None:
    oauth = {"acts_as": "user_oauth", "person_client": "manual"}
    assert set(refusal(oauth)) == {"person_client_id", "person_issuer"}  # no client ID; an HTTP API names its server
    assert set(refusal(oauth, upstream=True)) == {"person_client_id"}  # an upstream's server is discovered
    assert set(refusal({"acts_as": "user_oauth", "person_issuer": "ftp://as.example"})) == {"person_issuer"}
    one_endpoint = refusal({"acts_as": "user_oauth", "person_token_endpoint": "https://as.example/t"})
    assert set(one_endpoint) == {"person_authorization_endpoint", "person_issuer"}
    assert set(refusal({"acts_as": "user_key", "person_placement": "header"})) == {"person_key_name"}
    assert set(refusal({"acts_as": "token_exchange", "person_client_id": "x"})) == {
        "person_client_id",
        "person_audience",
    }
    shared_missing = {"acts_as": "user_key", "machine": "shared"}
    assert refusal(shared_missing) == {
        "machine": ["Choose the shared credentials machine clients use (below), or refuse them."]
    }


def test_a_key_sent_as_a_bearer_token_keeps_no_name() -> None:
    values = {"acts_as": "user_key", "person_placement": "bearer", "person_key_name": "X-Key", "person_label": "Key"}
    assert acting_join(values, None, "", upstream=False) == {"type": "user_key", "placement": "bearer", "label": "Key"}


def test_what_the_fields_cannot_hold_is_not_theirs() -> None:
    assert not acting_fits({"type": "user_key", "placement": "bearer", "extra": "x"})
    assert not acting_fits({"type": "user_key", "placement": "bearer", "machine": {"type": "user_key"}})
    config = {"url": "https://api.example/", "auth": {"type": "user_key", "placement": "bearer", "extra": "x"}}
    values, rest = http_config_split(config)
    assert rest == {"auth": config["auth"]} and values["http_url"] == "https://api.example/"


@pytest.mark.parametrize("auth", PERSONAL, ids=lambda c: f"{c['type']}{'+machine' if 'machine' in c else ''}")
def test_an_http_tools_personal_auth_round_trips_through_the_section(auth: dict[str, Any]) -> None:
    config = {"method": "GET", "url": "https://api.example/", "auth": auth}
    values, rest = http_config_split(config)
    assert rest is None
    assert http_config_join(values, rest) == config


# ---- on the pages ---------------------------------------------------------------------------------------


def http_form(tenant: Tenant, **overrides: Any) -> dict[str, Any]:
    return base_form(tenant, name="weather", backend="http", http_url="https://api.example/weather", **overrides)


@pytest.mark.django_db
def test_an_http_tool_made_to_act_as_each_person_with_an_oauth_connection(owner: Client, tenant: Tenant) -> None:
    form = http_form(
        tenant,
        http_acts_as="user_oauth",
        http_person_issuer="https://as.example",
        http_person_client="manual",
        http_person_client_id="platform-client",
        http_person_client_secret="oauth-secret",
        http_person_scope="weather.read",
        http_machine="shared",
        http_auth_type="bearer",
        http_auth_secret="robot-token",
    )

    missing = errors_of(owner.post(reverse("admin:tenants_tool_add"), form))
    assert set(missing) == {"http_person_client_secret", "http_auth_secret"}
    assert "oauth-secret" in missing["http_person_client_secret"][0]
    secret_set(tenant=tenant, name="oauth-secret", value="client-secret-value")
    secret_set(tenant=tenant, name="robot-token", value="robot-token-value")
    saved = owner.post(reverse("admin:tenants_tool_add"), form)

    assert saved.status_code == 302, errors_of(saved)
    assert Tool.objects.get(tenant=tenant, name="weather").config["auth"] == {
        "type": "user_oauth",
        "issuer": "https://as.example",
        "client": "manual",
        "client_id": "platform-client",
        "secret": "oauth-secret",
        "scope": "weather.read",
        "machine": {"type": "bearer", "secret": "robot-token"},
    }


@pytest.mark.django_db
def test_an_http_api_needs_its_authorization_server_named(owner: Client, tenant: Tenant) -> None:
    form = http_form(tenant, http_acts_as="user_oauth", http_person_client="metadata_document")

    errors = errors_of(owner.post(reverse("admin:tenants_tool_add"), form))

    assert list(errors) == ["http_person_issuer"] and '"issuer"' in errors["http_person_issuer"][0]
    assert not Tool.objects.exists()


@pytest.mark.django_db
def test_an_http_tool_acting_as_each_person_opens_as_saved_and_saves_unchanged(
    admin_client: Client, tenant: Tenant
) -> None:
    auth = {"type": "user_key", "placement": "query", "name": "appid", "label": "OpenWeather key", "machine": SHARED}
    config = {"method": "GET", "url": "https://api.example/weather", "auth": auth}
    secret_set(tenant=tenant, name="shared-token", value="v")
    tool = services.tool_create(tenant=tenant, name="weather", backend="http", config=config)
    url = reverse("admin:tenants_tool_change", args=[tool.pk])

    page = admin_client.get(url)
    form = page.context["adminform"].form
    html = page.content.decode()
    response = admin_client.post(url, form_posted(html, "tool_form"))

    assert response.status_code == 302, errors_of(response)
    assert form.initial["config"] is None
    assert form.initial["http_acts_as"] == "user_key" and form.initial["http_machine"] == "shared"
    assert form.initial["http_person_key_name"] == "appid" and form.initial["http_auth_secret"] == "shared-token"
    assert '<option value="user_key" selected>Each person: own API key</option>' in html
    tool.refresh_from_db()
    assert tool.config == config


@pytest.mark.django_db
def test_an_upstream_acting_as_each_person_opens_as_saved_and_saves_unchanged(
    admin_client: Client, tenant: Tenant
) -> None:
    secret_set(tenant=tenant, name="shared-token", value="v")
    stored = Upstream.objects.create(
        tenant=tenant,
        name="docs",
        url="https://docs.example/mcp",
        enabled=False,
        auth={"type": "bearer", "secret": "shared-token"},
    )
    url = reverse("admin:tenants_upstream_change", args=[stored.pk])
    page = admin_client.get(url).content.decode()
    assert "Acts as" in page and "Each person: OAuth connection" in page and "Shared credentials" in page

    # Discovered: no issuer needed for an upstream; machine clients keep the shared bearer token.
    posted = with_values(
        form_posted(page, "upstream_form"),
        acts_as="user_oauth",
        person_client="dynamic",
        person_scope="notes.read",
        machine="shared",
    )
    saved = admin_client.post(url, posted)

    assert saved.status_code == 302, errors_of(saved)
    expected = {"type": "user_oauth", "client": "dynamic", "scope": "notes.read", "machine": SHARED}
    stored.refresh_from_db()
    assert stored.auth == expected
    again = admin_client.get(url)
    assert again.context["adminform"].form.initial["acts_as"] == "user_oauth"
    assert admin_client.post(url, form_posted(again.content.decode(), "upstream_form")).status_code == 302
    stored.refresh_from_db()
    assert stored.auth == expected


@pytest.mark.django_db
def test_an_upstream_takes_no_key_in_the_query_and_no_unknown_secret(admin_client: Client, tenant: Tenant) -> None:
    stored = Upstream.objects.create(tenant=tenant, name="docs", url="https://docs.example/mcp", enabled=False)
    url = reverse("admin:tenants_upstream_change", args=[stored.pk])
    posted = form_posted(admin_client.get(url).content.decode(), "upstream_form")

    query = errors_of(admin_client.post(url, with_values(posted, acts_as="user_key", person_placement="query")))
    exchange = with_values(
        posted,
        acts_as="token_exchange",
        person_client_id="exchanger",
        person_client_secret="gone",
        person_audience="https://docs.example/mcp",
    )
    missing = errors_of(admin_client.post(url, exchange))

    assert "person_placement" in query
    assert list(missing) == ["person_client_secret"] and "gone" in missing["person_client_secret"][0]
    stored.refresh_from_db()
    assert stored.auth is None


@pytest.mark.django_db
def test_adding_an_upstream_that_exchanges_tokens_needs_machine_clients_credentials(
    admin_client: Client, tenant: Tenant
) -> None:
    data = {
        "tenant": tenant.pk,
        "name": "docs",
        "url": "http://127.0.0.1:9/mcp",
        "prefix": "",
        "enabled": "on",
        "acts_as": "token_exchange",
        "person_client_id": "gateway",
        "person_client_secret": "exchange-secret",
        "person_audience": "http://127.0.0.1:9/mcp",
        "machine": "refused",
    }

    errors = errors_of(admin_client.post(reverse("admin:tenants_upstream_add"), data))

    assert "machine" in errors and "token exchange" in errors["machine"][0]
    assert not Upstream.objects.exists()


@pytest.mark.django_db
def test_an_admin_connects_their_own_account_to_an_upstream_that_acts_as_each_person(
    admin_client: Client, tenant: Tenant
) -> None:
    personal = Upstream.objects.create(
        tenant=tenant, name="docs", url="https://docs.example/mcp", enabled=False, auth={"type": "user_oauth"}
    )
    shared = Upstream.objects.create(tenant=tenant, name="wiki", url="https://wiki.example/mcp", enabled=False)
    page = admin_client.get(reverse("admin:tenants_upstream_change", args=[personal.pk])).content.decode()
    assert "Connect my account" in page
    assert (
        "Connect my account"
        not in admin_client.get(reverse("admin:tenants_upstream_change", args=[shared.pk])).content.decode()
    )

    connect = reverse("admin:tenants_upstream_connect", args=[personal.pk])
    assert admin_client.get(connect).status_code == 405
    answer = admin_client.post(connect)

    link = ConnectLink.objects.get()
    assert answer.status_code == 302 and answer["Location"].startswith("/connect/")
    assert (link.tenant_id, link.target) == (tenant.pk, f"upstream:{personal.pk}")
    assert admin_client.post(reverse("admin:tenants_upstream_connect", args=[shared.pk])).status_code == 302
    assert ConnectLink.objects.count() == 1
