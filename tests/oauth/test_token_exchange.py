"""Token exchange (RFC 8693) at the real token endpoint: a tenant's confidential client trades a person's token for
one to an upstream its admin allowed, and every other request is refused with nothing issued."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from oauth2_provider.models import get_access_token_model

from mcp_platform.oauth.connections import connection_list, connection_revoke
from mcp_platform.oauth.machine_clients import machine_client_create
from mcp_platform.oauth.models import ExchangedToken, TenantApplication
from mcp_platform.oauth.token_exchange import ACCESS_TOKEN_TYPE, GRANT_TYPE, INTERNAL_SUBJECT
from tenants.services import membership_remove
from tests.factories import MembershipFactory, OAuthClientFactory, UserFactory, access_token_create
from tests.gateway.conftest import INIT_PARAMS, request, rpc
from tests.oauth.conftest import ACME_MCP, BASE
from tests.oauth.flow import HOST, register, tokens

UPSTREAM = "https://billing.example.com/api"
OTHER_UPSTREAM = "https://crm.example.com/api"
GLOBEX_MCP = f"{BASE}/t/globex/mcp"
REFRESH_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:refresh_token"


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def gateway(acme: Any) -> tuple[TenantApplication, str]:
    """Acme's client that may exchange people's tokens for tokens to the billing API."""
    return machine_client_create(
        tenant=acme,
        name="Gateway",
        scopes=["mcp:tools", "mcp:resources", "mcp:prompts"],
        exchange_targets=[UPSTREAM],
    )


@pytest.fixture
def subject(member: Any, client_app: Any) -> str:
    """Alice's access token for Acme's endpoint, issued to the client she uses."""
    return access_token_create(user=member, application=client_app, resource=[ACME_MCP], scope="mcp:tools mcp:prompts")


def _exchange(client: TenantApplication, secret: str, subject_token: str, **data: Any) -> Any:
    basic = base64.b64encode(f"{client.client_id}:{secret}".encode()).decode()
    body = {
        "grant_type": GRANT_TYPE,
        "subject_token": subject_token,
        "subject_token_type": ACCESS_TOKEN_TYPE,
        "resource": UPSTREAM,
        **data,
    }
    return Client().post(
        "/oauth/token/",
        {key: value for key, value in body.items() if value is not None},
        HTTP_HOST=HOST,
        HTTP_AUTHORIZATION=f"Basic {basic}",
    )


def _sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _upstream_tokens() -> list[int]:
    """The access tokens for an upstream (whatever issued them)."""
    rows = get_access_token_model().objects.values_list("pk", "resource")
    return [pk for pk, resource in rows if set(resource or []) & {UPSTREAM, OTHER_UPSTREAM}]


def _refused(response: Any, status: int, error: str) -> None:
    assert response.status_code == status, response.content
    assert response.json()["error"] == error
    assert not ExchangedToken.objects.exists()
    assert not _upstream_tokens()


def _opens_acme(token: str) -> bool:
    reply = async_to_sync(request)(
        "POST", "/t/acme/mcp", body=rpc("initialize", INIT_PARAMS), headers={"authorization": f"Bearer {token}"}
    )
    return bool(reply.status == 200)


# ---- what is issued ----------------------------------------------------------------------------------------


# The live ASGI stack runs on other connections: the rows must be committed.
@pytest.mark.django_db(transaction=True)
def test_a_persons_token_is_exchanged_for_one_to_the_upstream_acting_for_them(gateway, browser, member):
    client, secret = gateway
    registered = register(Client())
    person_client_id = registered.json()["client_id"]
    issued_to_person = tokens(browser, person_client_id)

    response = _exchange(client, secret, issued_to_person["access_token"])

    assert response.status_code == 200, response.content
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert body["issued_token_type"] == ACCESS_TOKEN_TYPE
    assert body["token_type"] == "Bearer"
    assert body["scope"] == "mcp:tools mcp:resources mcp:prompts"
    assert 0 < body["expires_in"] <= 3600
    assert "refresh_token" not in body
    row = get_access_token_model().objects.get(token_checksum=_sha256(body["access_token"]))
    assert (row.user, row.application, row.resource) == (member, client, [UPSTREAM])
    actor = ExchangedToken.objects.get(access_token=row)
    assert actor.actor == client
    assert (actor.subject_client_id, actor.subject_resource) == (person_client_id, ACME_MCP)
    # Its audience is the upstream: the platform's own endpoint refuses it, and still takes the person's token.
    assert not _opens_acme(body["access_token"])
    assert _opens_acme(issued_to_person["access_token"])


def test_scopes_narrow_and_the_token_ends_no_later_than_the_subject(gateway, member, client_app):
    client, secret = gateway
    short_lived = access_token_create(
        user=member, application=client_app, resource=[ACME_MCP], scope="mcp:tools mcp:prompts", expires_in=120
    )

    response = _exchange(client, secret, short_lived, scope="mcp:tools")

    assert response.status_code == 200, response.content
    assert response.json()["scope"] == "mcp:tools"
    assert response.json()["expires_in"] <= 120
    subject_row = get_access_token_model().objects.get(token_checksum=_sha256(short_lived))
    issued_row = get_access_token_model().objects.get(token_checksum=_sha256(response.json()["access_token"]))
    assert issued_row.expires <= subject_row.expires


def test_without_a_scope_the_subjects_scopes_within_the_clients(acme, subject):
    client, secret = machine_client_create(
        tenant=acme, name="Tools only", scopes=["mcp:tools", "mcp:resources"], exchange_targets=[UPSTREAM]
    )

    response = _exchange(client, secret, subject)

    assert response.status_code == 200, response.content
    assert response.json()["scope"] == "mcp:tools"


def test_the_upstream_may_be_named_by_audience_or_by_both_parameters_alike(gateway, subject):
    client, secret = gateway
    by_audience = _exchange(client, secret, subject, resource=None, audience=UPSTREAM)
    by_both = _exchange(client, secret, subject, audience=UPSTREAM)
    assert by_audience.status_code == 200, by_audience.content
    assert by_both.status_code == 200, by_both.content


# ---- who may exchange --------------------------------------------------------------------------------------


def test_a_public_client_is_invalid_client_even_with_targets_forced_on_it(acme, subject):
    # An empty secret "authenticates" in django-oauth-toolkit's check: the grant itself must turn it away.
    public = OAuthClientFactory(name="Public", tenant=acme, client_secret="")
    TenantApplication.objects.filter(pk=public.pk).update(exchange_targets=UPSTREAM)
    response = Client().post(
        "/oauth/token/",
        {
            "grant_type": GRANT_TYPE,
            "client_id": public.client_id,
            "client_secret": "",
            "subject_token": subject,
            "subject_token_type": ACCESS_TOKEN_TYPE,
            "resource": UPSTREAM,
        },
        HTTP_HOST=HOST,
    )
    _refused(response, 401, "invalid_client")


def test_a_wrong_secret_is_invalid_client(gateway, subject):
    client, _ = gateway
    _refused(_exchange(client, "not-the-secret", subject), 401, "invalid_client")


def test_a_client_not_allowed_to_exchange_is_unauthorized(acme, subject):
    client, secret = machine_client_create(tenant=acme, name="Nightly report", scopes=["mcp:tools"])
    _refused(_exchange(client, secret, subject), 400, "unauthorized_client")


def test_exchanges_are_limited_per_client_and_hour(gateway, subject, settings):
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TOKEN_EXCHANGES_PER_CLIENT_PER_HOUR": 1}
    client, secret = gateway
    assert _exchange(client, secret, subject).status_code == 200
    get_access_token_model().objects.filter(pk__in=_upstream_tokens()).delete()

    refused = _exchange(client, secret, subject)

    _refused(refused, 429, "temporarily_unavailable")
    assert 0 < int(refused["Retry-After"]) <= 3600


# ---- which subject tokens ----------------------------------------------------------------------------------


@pytest.mark.parametrize("expires_in", [-60, 0])
def test_an_expired_subject_token_is_invalid_request(gateway, member, client_app, expires_in):
    client, secret = gateway
    expired = access_token_create(user=member, application=client_app, resource=[ACME_MCP], expires_in=expires_in)
    _refused(_exchange(client, secret, expired), 400, "invalid_request")


def test_a_revoked_subject_token_is_invalid_request(gateway, member, client_app, subject):
    client, secret = gateway
    assert connection_revoke(user=member, application_id=client_app.pk, resource=ACME_MCP)
    _refused(_exchange(client, secret, subject), 400, "invalid_request")


def test_a_token_for_another_tenant_is_invalid_request(gateway, globex, member, client_app):
    client, secret = gateway
    MembershipFactory(user=member, tenant=globex)  # Alice belongs to both: only the token's audience tells
    theirs = access_token_create(user=member, application=client_app, resource=[GLOBEX_MCP])
    _refused(_exchange(client, secret, theirs), 400, "invalid_request")


def test_a_person_who_left_the_tenant_is_invalid_request(gateway, acme, member, subject):
    client, secret = gateway
    membership_remove(tenant=acme, user=member)
    _refused(_exchange(client, secret, subject), 400, "invalid_request")


def test_a_machine_clients_own_token_is_invalid_request(gateway, acme):
    client, secret = gateway
    robot, _ = machine_client_create(tenant=acme, name="Robot", scopes=["mcp:tools"])
    machine_token = access_token_create(user=None, application=robot, resource=[ACME_MCP])
    _refused(_exchange(client, secret, machine_token), 400, "invalid_request")


def test_a_refresh_token_is_no_subject_token(gateway, browser):
    client, secret = gateway
    person_tokens = tokens(browser, register(Client()).json()["client_id"])
    refresh = person_tokens["refresh_token"]
    _refused(_exchange(client, secret, refresh), 400, "invalid_request")
    _refused(_exchange(client, secret, refresh, subject_token_type=REFRESH_TOKEN_TYPE), 400, "invalid_request")


def test_an_actor_token_or_another_requested_type_is_invalid_request(gateway, subject):
    client, secret = gateway
    _refused(
        _exchange(client, secret, subject, actor_token=subject, actor_token_type=ACCESS_TOKEN_TYPE),
        400,
        "invalid_request",
    )
    _refused(_exchange(client, secret, subject, requested_token_type=REFRESH_TOKEN_TYPE), 400, "invalid_request")
    _refused(_exchange(client, secret, ""), 400, "invalid_request")


# ---- scope and target --------------------------------------------------------------------------------------


def test_a_wider_scope_is_invalid_scope(gateway, subject):
    client, secret = gateway
    _refused(_exchange(client, secret, subject, scope="mcp:tools mcp:resources"), 400, "invalid_scope")


def test_a_scope_the_client_may_not_hold_is_invalid_scope(acme, subject):
    client, secret = machine_client_create(
        tenant=acme, name="Prompts only", scopes=["mcp:prompts"], exchange_targets=[UPSTREAM]
    )
    _refused(_exchange(client, secret, subject, scope="mcp:tools"), 400, "invalid_scope")


def test_an_upstream_not_allowed_or_none_or_two_is_invalid_target(gateway, subject):
    client, secret = gateway
    _refused(_exchange(client, secret, subject, resource=OTHER_UPSTREAM), 400, "invalid_target")
    _refused(_exchange(client, secret, subject, resource=ACME_MCP), 400, "invalid_target")
    _refused(_exchange(client, secret, subject, resource=None), 400, "invalid_target")
    _refused(_exchange(client, secret, subject, audience=OTHER_UPSTREAM), 400, "invalid_target")
    _refused(_exchange(client, secret, subject, resource=[UPSTREAM, OTHER_UPSTREAM]), 400, "invalid_target")


def test_an_exchanged_token_is_no_subject_token_for_a_further_hop(gateway, acme, subject):
    client, secret = gateway
    hop = _exchange(client, secret, subject).json()["access_token"]
    relay, relay_secret = machine_client_create(
        tenant=acme, name="Relay", scopes=["mcp:tools"], exchange_targets=[UPSTREAM, OTHER_UPSTREAM]
    )
    issued = set(get_access_token_model().objects.values_list("pk", flat=True))

    to_a_target_not_allowed = _exchange(client, secret, hop, resource=OTHER_UPSTREAM)
    to_an_allowed_target = _exchange(relay, relay_secret, hop, resource=OTHER_UPSTREAM)

    assert to_a_target_not_allowed.json()["error"] == "invalid_target"
    assert to_an_allowed_target.json()["error"] == "invalid_request"
    assert set(get_access_token_model().objects.values_list("pk", flat=True)) == issued


# ---- the person's connected apps ---------------------------------------------------------------------------


def test_exchanged_tokens_are_not_listed_apart_and_go_with_the_connection(gateway, member, client_app, subject):
    client, secret = gateway
    exchanged = _exchange(client, secret, subject).json()["access_token"]

    assert [(c.application, c.resource) for c in connection_list(user=member)] == [(client_app, ACME_MCP)]
    assert connection_revoke(user=member, application_id=client_app.pk, resource=ACME_MCP)
    assert not get_access_token_model().objects.filter(token_checksum=_sha256(exchanged)).exists()


# ---- the admin ---------------------------------------------------------------------------------------------


def _tenant_admin(tenant: Any) -> Client:
    ada = UserFactory(username="ada")
    MembershipFactory(user=ada, tenant=tenant, role="admin")
    browser = Client()
    browser.force_login(ada)
    return browser


def test_a_tenant_admin_sees_and_sets_what_their_clients_may_exchange(acme, globex, gateway):
    theirs, _ = machine_client_create(
        tenant=globex, name="Globex gateway", scopes=["mcp:tools"], exchange_targets=[OTHER_UPSTREAM]
    )
    admin = _tenant_admin(acme)

    for listing in ("/admin/oauth/tenantapplication/", "/admin/oauth/machineclient/"):
        page = admin.get(listing).content.decode()
        assert "Token exchange" in page and UPSTREAM in page
        assert OTHER_UPSTREAM not in page
    form = admin.get(f"/admin/oauth/machineclient/{gateway[0].pk}/change/").context["adminform"].form
    assert form.initial["exchange_targets"] == UPSTREAM
    assert admin.get(f"/admin/oauth/machineclient/{theirs.pk}/change/").status_code == 404

    added = admin.post(
        "/admin/oauth/machineclient/add/",
        {
            "tenant": acme.pk,
            "name": "Relay",
            "allowed_scopes": "mcp:tools",
            "exchange_targets": f"{UPSTREAM}\n{OTHER_UPSTREAM}",
        },
    )
    assert added.status_code == 302, added.context["adminform"].form.errors
    assert TenantApplication.objects.get(name="Relay").exchange_target_list() == [UPSTREAM, OTHER_UPSTREAM]


def test_exchange_targets_must_be_https_urls_of_a_confidential_bound_client(acme):
    admin = _tenant_admin(acme)
    refused = admin.post(
        "/admin/oauth/machineclient/add/",
        {
            "tenant": acme.pk,
            "name": "Plain",
            "allowed_scopes": "mcp:tools",
            "exchange_targets": "http://billing.example.com/api",
        },
    )
    assert "use https" in str(refused.context["adminform"].form.errors["exchange_targets"])
    public = admin.post(
        "/admin/oauth/tenantapplication/add/",
        {
            "tenant": acme.pk,
            "name": "Acme CLI",
            "client_type": "public",
            "authorization_grant_type": "authorization-code",
            "redirect_uris": "http://127.0.0.1/callback",
            "algorithm": "",
            "exchange_targets": UPSTREAM,
        },
    )
    assert "confidential client bound to a tenant" in str(public.context["adminform"].form.errors["exchange_targets"])
    assert not TenantApplication.objects.filter(name__in=["Plain", "Acme CLI"]).exists()


def test_a_subject_row_is_named_only_by_the_platforms_own_code_never_by_a_parameter(gateway, subject):
    """A call's exchange names its subject by row in process; a client that sends the same name as a parameter
    (with a made-up subject token, or none) is refused as any client without a live subject token."""
    client, secret = gateway
    row = get_access_token_model().objects.get(token_checksum=_sha256(subject))
    _refused(_exchange(client, secret, "made-up", **{INTERNAL_SUBJECT: str(row.pk)}), 400, "invalid_request")
    _refused(_exchange(client, secret, None, **{INTERNAL_SUBJECT: str(row.pk)}), 400, "invalid_request")
    assert _upstream_tokens() == []
