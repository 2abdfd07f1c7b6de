"""Token exchanges (RFC 8693) go into the tenant's activity log: for whom, which client, which upstream, issued or
refused with the OAuth error code, never a token; and the log's pages show and filter them."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from mcp_platform.activity.models import ActivityRecord
from mcp_platform.oauth.machine_clients import machine_client_create
from mcp_platform.oauth.models import TenantApplication
from mcp_platform.oauth.token_exchange import ACCESS_TOKEN_TYPE, GRANT_TYPE
from tenants.models import Membership, Tenant
from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, UserFactory, access_token_create

pytestmark = pytest.mark.django_db

BASE = "http://127.0.0.1:8000"
HOST = "127.0.0.1:8000"
UPSTREAM = "https://billing.example.com/api"
CHANGELIST = "admin:activity_activityrecord_changelist"


@pytest.fixture(autouse=True)
def _fast_hashing_and_fresh_limits(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()


@pytest.fixture
def acme() -> Tenant:
    return TenantFactory(slug="acme", name="Acme", requires_authorization=True)


@pytest.fixture
def alice(acme: Tenant) -> Any:
    user = UserFactory(username="alice")
    MembershipFactory(user=user, tenant=acme)
    return user


@pytest.fixture
def gateway(acme: Tenant) -> tuple[TenantApplication, str]:
    return machine_client_create(tenant=acme, name="Gateway", scopes=["mcp:tools"], exchange_targets=[UPSTREAM])


@pytest.fixture
def subject(alice: Any) -> str:
    return access_token_create(
        user=alice, application=OAuthClientFactory(name="Claude"), resource=[f"{BASE}/t/acme/mcp"], scope="mcp:tools"
    )


def _exchange(gateway: tuple[TenantApplication, str], subject: str, **data: str) -> Any:
    client, secret = gateway
    body = {
        "grant_type": GRANT_TYPE,
        "subject_token": subject,
        "subject_token_type": ACCESS_TOKEN_TYPE,
        "resource": UPSTREAM,
        **data,
    }
    basic = base64.b64encode(f"{client.client_id}:{secret}".encode()).decode()
    return Client().post("/oauth/token/", body, HTTP_HOST=HOST, HTTP_AUTHORIZATION=f"Basic {basic}")


def _logged() -> list[ActivityRecord]:
    return list(ActivityRecord.objects.filter(kind=ActivityRecord.Kind.EXCHANGE).order_by("id"))


def test_issued_and_refused_exchanges_are_logged_without_a_token(gateway, subject, alice, acme, settings):
    issued = _exchange(gateway, subject)
    assert issued.status_code == 200
    assert _exchange(gateway, subject, resource="https://elsewhere.example.com/").status_code == 400
    assert _exchange(gateway, "not-a-token").status_code == 400
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TOKEN_EXCHANGES_PER_CLIENT_PER_HOUR": 3}
    assert _exchange(gateway, subject).status_code == 429
    # A caller that does not authenticate as the client is no exchange of the tenant's: nothing is logged.
    assert _exchange((gateway[0], "wrong secret"), subject).status_code == 401

    rows = _logged()
    client_id = gateway[0].client_id
    assert [(r.tenant_id, r.principal, r.client_id, r.client_name, r.method) for r in rows] == [
        (acme.pk, str(alice.pk), client_id, "Gateway", "oauth/token-exchange"),
        (acme.pk, "", client_id, "Gateway", "oauth/token-exchange"),  # refused before the subject token was read
        (acme.pk, "", client_id, "Gateway", "oauth/token-exchange"),
        (acme.pk, "", client_id, "Gateway", "oauth/token-exchange"),
    ]
    assert [(r.target, r.outcome, r.details) for r in rows] == [
        (UPSTREAM, "ok", {"scope": "mcp:tools"}),
        ("https://elsewhere.example.com/", "refused", {"scope": "", "error": "invalid_target"}),
        (UPSTREAM, "refused", {"scope": "", "error": "invalid_request"}),
        (UPSTREAM, "rate_limited", {"scope": "", "error": "temporarily_unavailable"}),
    ]
    everything = json.dumps(list(ActivityRecord.objects.values()), default=str)
    assert subject not in everything
    assert issued.json()["access_token"] not in everything
    assert gateway[1] not in everything


def test_the_log_shows_and_filters_exchanges_to_the_tenants_admin_only(client, gateway, subject, alice, acme):
    assert _exchange(gateway, subject).status_code == 200
    assert _exchange(gateway, subject, scope="mcp:prompts").status_code == 400
    globex = TenantFactory(slug="globex", name="Globex")
    ada = UserFactory(username="ada")
    MembershipFactory(tenant=acme, user=ada, role=Membership.Role.ADMIN)
    client.force_login(ada)

    page = client.get(reverse(CHANGELIST), {"kind__exact": "exchange"})

    assert page.status_code == 200
    rows = page.context["cl"].result_list
    assert [(r.target, r.outcome) for r in rows] == [(UPSTREAM, "refused"), (UPSTREAM, "ok")]
    text = page.content.decode()
    assert "Token exchange" in text and "Refused (OAuth error): invalid_scope" in text and "Issued" in text
    [upstreams] = [
        spec for spec in page.context["cl"].filter_specs if getattr(spec, "parameter_name", "") == "upstream"
    ]
    assert [(str(value), str(label)) for value, label in upstreams.lookup_choices] == [(UPSTREAM, UPSTREAM)]
    assert len(client.get(reverse(CHANGELIST), {"upstream": UPSTREAM}).context["cl"].result_list) == 2

    detail = client.get(reverse("admin:activity_activityrecord_change", args=[rows[1].pk])).content.decode()
    assert "Issued (scope: mcp:tools)" in detail and "Gateway" in detail and UPSTREAM in detail

    # Another tenant's admin sees none of it.
    other = UserFactory(username="gus")
    MembershipFactory(tenant=globex, user=other, role=Membership.Role.ADMIN)
    client.force_login(other)
    assert not client.get(reverse(CHANGELIST), {"kind__exact": "exchange"}).context["cl"].result_list
