"""The authorization server: discovery, registration, code + PKCE, audience, refresh rotation."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from oauth2_provider.models import get_access_token_model

from mcp_platform.oauth.models import TenantApplication
from tests.factories import OAuthClientFactory
from tests.gateway.conftest import INIT_PARAMS, request, rpc
from tests.oauth.conftest import BASE
from tests.oauth.flow import (
    HOST,
    REDIRECT,
    Pkce,
    authorize_query,
    consent,
    exchange,
    redirect_params,
    register,
    tokens,
)

AccessToken = get_access_token_model()


def _registered_client_id(client: Client, **metadata: Any) -> str:
    response = register(client, **metadata)
    assert response.status_code == 201, response.content
    return str(response.json()["client_id"])


# ---- discovery ---------------------------------------------------------------------------------------


def test_metadata_issuer_is_where_it_is_served_and_offers_only_code_with_s256(client, db):
    document = client.get("/.well-known/oauth-authorization-server", HTTP_HOST=HOST).json()
    assert document["issuer"] == BASE
    assert document["authorization_endpoint"] == f"{BASE}/oauth/authorize/"
    assert document["token_endpoint"] == f"{BASE}/oauth/token/"
    assert document["registration_endpoint"] == f"{BASE}/oauth/register/"
    assert document["response_types_supported"] == ["code"]
    assert document["grant_types_supported"] == [
        "authorization_code",
        "refresh_token",
        "client_credentials",
        "urn:ietf:params:oauth:grant-type:token-exchange",
    ]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["authorization_response_iss_parameter_supported"] is True
    assert "none" in document["token_endpoint_auth_methods_supported"]
    assert document["scopes_supported"] == ["mcp:prompts", "mcp:resources", "mcp:tools", "openid"]


def test_protected_resource_metadata_points_at_this_issuer(client, acme):
    resource = client.get("/.well-known/oauth-protected-resource/t/acme/mcp", HTTP_HOST=HOST).json()
    issuer = client.get("/.well-known/oauth-authorization-server", HTTP_HOST=HOST).json()["issuer"]
    assert resource["authorization_servers"] == [issuer]


# ---- the whole flow ----------------------------------------------------------------------------------


# The live ASGI stack runs on other connections: the rows must be committed.
@pytest.mark.django_db(transaction=True)
def test_registered_client_gets_a_token_that_opens_the_endpoint(client, acme, browser):
    client_id = _registered_client_id(client)
    pkce = Pkce.new()
    params = redirect_params(consent(browser, authorize_query(client_id, pkce)))
    assert params["state"] == "xyz"
    assert params["iss"] == BASE  # RFC 9207
    response = exchange(Client(), client_id=client_id, code=params["code"], verifier=pkce.verifier)
    assert response.status_code == 200, response.content
    tokens = response.json()
    assert tokens["token_type"] == "Bearer"
    assert 0 < tokens["expires_in"] <= 3600
    assert set(tokens["scope"].split()) == {"mcp:tools", "mcp:resources", "mcp:prompts"}
    reply = async_to_sync(request)(
        "POST",
        "/t/acme/mcp",
        body=rpc("initialize", INIT_PARAMS),
        headers={"authorization": f"Bearer {tokens['access_token']}"},
    )
    assert reply.status == 200


def test_consent_page_shows_tenant_client_redirect_host_and_plain_scopes(client, acme, browser):
    client_id = _registered_client_id(client, client_name="Cursor")
    page = browser.get(f"/oauth/authorize/?{_urlencode(authorize_query(client_id, Pkce.new()))}", HTTP_HOST=HOST)
    html = page.content.decode()
    assert "Acme" in html and "Cursor" in html and "127.0.0.1" in html
    assert "Registered itself automatically" in html
    assert "See and run this workspace&#x27;s tools" in html
    assert 'name="allow"' in html


def test_deny_sends_access_denied_back_to_the_client(client, acme, browser):
    client_id = _registered_client_id(client)
    params = redirect_params(consent(browser, authorize_query(client_id, Pkce.new()), allow=False))
    assert params["error"] == "access_denied"
    assert "code" not in params


def test_signed_out_person_is_sent_to_the_login_page(client, acme, member):
    client_id = _registered_client_id(client)
    response = Client().get(f"/oauth/authorize/?{_urlencode(authorize_query(client_id, Pkce.new()))}", HTTP_HOST=HOST)
    assert response.status_code == 302
    assert response["Location"].startswith("/account/login/?next=")


# ---- audience and membership -------------------------------------------------------------------------


def test_grant_is_refused_to_a_person_who_is_not_a_member(client, acme, globex, browser):
    client_id = _registered_client_id(client)
    query = authorize_query(client_id, Pkce.new(), resource=f"{BASE}/t/globex/mcp")
    page = browser.get(f"/oauth/authorize/?{_urlencode(query)}", HTTP_HOST=HOST)
    assert page.status_code == 403
    assert "not a member of Globex" in page.content.decode()


@pytest.mark.parametrize("resource", [None, "https://evil.example/t/acme/mcp", f"{BASE}/t/nobody/mcp"])
def test_authorization_needs_one_endpoint_of_this_platform(client, acme, browser, resource):
    client_id = _registered_client_id(client)
    page = browser.get(
        f"/oauth/authorize/?{_urlencode(authorize_query(client_id, Pkce.new(), resource=resource))}", HTTP_HOST=HOST
    )
    assert page.status_code == 403


def test_tampered_resource_on_submit_is_refused(client, acme, globex, browser):
    client_id = _registered_client_id(client)
    query = authorize_query(client_id, Pkce.new())
    page = browser.get(f"/oauth/authorize/?{_urlencode(query)}", HTTP_HOST=HOST)
    data = {k: v for k, v in page.context["form"].initial.items() if v is not None}
    data.update(allow="on", resource=f"{BASE}/t/globex/mcp")
    params = redirect_params(browser.post("/oauth/authorize/", data, HTTP_HOST=HOST))
    assert params["error"] == "access_denied"


@pytest.mark.django_db(transaction=True)
def test_a_legacy_transport_client_gets_a_token_for_the_sse_endpoint_it_asked_for(client, acme, browser):
    client_id = _registered_client_id(client)
    sse = f"{BASE}/t/acme/sse"
    issued = tokens(browser, client_id, resource=sse)
    token = AccessToken.objects.get(token_checksum=hashlib.sha256(issued["access_token"].encode()).hexdigest())
    assert token.resource == [sse]
    refreshed = Client().post(
        "/oauth/token/",
        {"grant_type": "refresh_token", "refresh_token": issued["refresh_token"], "client_id": client_id},
        HTTP_HOST=HOST,
    )
    assert refreshed.status_code == 200, refreshed.content


@pytest.mark.parametrize("path", ["/t/acme/sse/", "/t/acme/other", "/t/acme", "/t/globex/sse"])
def test_only_the_endpoints_of_a_tenant_can_be_granted(client, acme, globex, browser, path):
    client_id = _registered_client_id(client)
    query = authorize_query(client_id, Pkce.new(), resource=f"{BASE}{path}")
    page = browser.get(f"/oauth/authorize/?{_urlencode(query)}", HTTP_HOST=HOST)
    assert page.status_code == 403


def test_client_bound_to_a_tenant_cannot_be_authorized_for_another(acme, globex, browser):
    globex_client = OAuthClientFactory(tenant=globex, redirect_uris=REDIRECT)
    page = browser.get(
        f"/oauth/authorize/?{_urlencode(authorize_query(globex_client.client_id, Pkce.new()))}", HTTP_HOST=HOST
    )
    assert page.status_code == 403


def test_token_request_cannot_widen_the_audience(client, acme, globex, browser):
    client_id = _registered_client_id(client)
    pkce = Pkce.new()
    code = redirect_params(consent(browser, authorize_query(client_id, pkce)))["code"]
    response = exchange(
        Client(), client_id=client_id, code=code, verifier=pkce.verifier, resource=f"{BASE}/t/globex/mcp"
    )
    assert response.status_code == 400
    # DOT labels this one error body text/html; the body is the RFC 6749 JSON all the same.
    assert json.loads(response.content)["error"] == "invalid_target"


# ---- PKCE and redirect URIs --------------------------------------------------------------------------


def test_pkce_is_required(client, acme, browser):
    client_id = _registered_client_id(client)
    query = authorize_query(client_id, Pkce.new(), code_challenge=None, code_challenge_method=None)
    response = browser.get(f"/oauth/authorize/?{_urlencode(query)}", HTTP_HOST=HOST)
    assert redirect_params(response)["error"] == "invalid_request"


@pytest.mark.parametrize("method", ["plain", None, "s256", "S512"])
def test_a_challenge_method_other_than_s256_is_refused_before_the_consent_page(client, acme, browser, method):
    client_id = _registered_client_id(client)
    query = authorize_query(client_id, Pkce.new(), code_challenge_method=method)
    response = browser.get(f"/oauth/authorize/?{_urlencode(query)}", HTTP_HOST=HOST)
    # Sent back to the client (its redirect URI is valid), never shown a consent page it cannot complete.
    params = redirect_params(response)
    assert response["Location"].startswith(REDIRECT)
    assert params["error"] == "invalid_request"
    assert params["state"] == "xyz"
    assert params["iss"] == BASE
    assert "code" not in params


def test_a_native_client_gets_the_pkce_refusal_on_its_own_scheme(client, acme, browser):
    redirect = "cursor://anysphere.cursor-retrieval/oauth/callback"
    client_id = _registered_client_id(client, redirect_uris=[redirect])
    query = authorize_query(client_id, Pkce.new(), code_challenge_method="plain", redirect_uri=redirect)
    response = browser.get(f"/oauth/authorize/?{_urlencode(query)}", HTTP_HOST=HOST)
    assert response.status_code == 302
    assert response["Location"].startswith(f"{redirect}?error=invalid_request")


def test_plain_pkce_submitted_through_a_tampered_form_gets_no_code(client, acme, browser):
    client_id = _registered_client_id(client)
    page = browser.get(f"/oauth/authorize/?{_urlencode(authorize_query(client_id, Pkce.new()))}", HTTP_HOST=HOST)
    data = {k: v for k, v in page.context["form"].initial.items() if v is not None}
    data.update(allow="on", code_challenge_method="plain")
    params = redirect_params(browser.post("/oauth/authorize/", data, HTTP_HOST=HOST))
    assert params["error"] == "invalid_request"
    assert "code" not in params


@pytest.mark.parametrize(
    "challenge",
    [
        "",
        "short",
        "A" * 42,
        "A" * 44,
        "A" * 128,
        "A" * 42 + "=",  # padded base64
        "A" * 42 + "+",  # base64, not base64url
        "A" * 42 + "~",  # unreserved, but no SHA-256 digest encodes to it
    ],
)
def test_an_s256_challenge_that_is_not_a_base64url_sha256_is_refused_before_consent(client, acme, browser, challenge):
    client_id = _registered_client_id(client)
    query = authorize_query(client_id, Pkce.new(), code_challenge=challenge)
    params = redirect_params(browser.get(f"/oauth/authorize/?{_urlencode(query)}", HTTP_HOST=HOST))
    assert params["error"] == "invalid_request"


def test_a_tampered_s256_challenge_on_submit_gets_no_code(client, acme, browser):
    client_id = _registered_client_id(client)
    page = browser.get(f"/oauth/authorize/?{_urlencode(authorize_query(client_id, Pkce.new()))}", HTTP_HOST=HOST)
    data = {k: v for k, v in page.context["form"].initial.items() if v is not None}
    data.update(allow="on", code_challenge="x")
    params = redirect_params(browser.post("/oauth/authorize/", data, HTTP_HOST=HOST))
    assert params["error"] == "invalid_request"
    assert "code" not in params


def test_a_bad_challenge_with_an_unregistered_redirect_is_shown_not_redirected(client, acme, browser):
    client_id = _registered_client_id(client)
    query = authorize_query(
        client_id, Pkce.new(), code_challenge_method="plain", redirect_uri="https://evil.example/cb"
    )
    response = browser.get(f"/oauth/authorize/?{_urlencode(query)}", HTTP_HOST=HOST)
    assert response.status_code == 400
    assert "evil.example" not in response.get("Location", "")


def test_wrong_code_verifier_gets_no_token(client, acme, browser):
    client_id = _registered_client_id(client)
    code = redirect_params(consent(browser, authorize_query(client_id, Pkce.new())))["code"]
    response = exchange(Client(), client_id=client_id, code=code, verifier=Pkce.new().verifier)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_loopback_redirect_may_use_any_port_but_the_path_must_match(client, acme, browser):
    client_id = _registered_client_id(client)
    other_port = "http://127.0.0.1:40001/callback"
    params = redirect_params(consent(browser, authorize_query(client_id, Pkce.new(), redirect_uri=other_port)))
    assert "code" in params
    other_path = browser.get(
        f"/oauth/authorize/?{_urlencode(authorize_query(client_id, Pkce.new(), redirect_uri='http://127.0.0.1:40001/evil'))}",
        HTTP_HOST=HOST,
    )
    assert other_path.status_code == 400


def test_custom_scheme_redirect_is_allowed_for_native_clients(client, acme, browser):
    client_id = _registered_client_id(client, redirect_uris=["cursor://anysphere.cursor-retrieval/oauth/callback"])
    query = authorize_query(client_id, Pkce.new(), redirect_uri="cursor://anysphere.cursor-retrieval/oauth/callback")
    response = consent(browser, query)
    assert response.status_code == 302
    assert response["Location"].startswith("cursor://anysphere.cursor-retrieval/oauth/callback?code=")


@pytest.mark.parametrize(
    "uri",
    [
        "javascript:alert(1)",
        "vbscript:msgbox",
        "http://attacker.example/callback",
        "https://app.example/cb#fragment",
        "https://app.example/cb#",
        "http://[::1/callback",  # does not parse
    ],
)
def test_dangerous_redirect_uris_cannot_be_registered(client, db, uri):
    response = register(client, redirect_uris=[uri])
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


# ---- registration limits -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "metadata",
    [
        {"grant_types": ["client_credentials"]},
        {"grant_types": ["implicit"]},
        {"response_types": ["token"]},
        {"redirect_uris": []},
        {"redirect_uris": [f"http://127.0.0.1/{n}" for n in range(11)]},
        {"client_name": "x" * 101},
    ],
)
def test_registration_accepts_only_what_mcp_clients_need(client, db, metadata):
    response = register(client, **metadata)
    assert response.status_code == 400
    assert TenantApplication.objects.count() == 0


def test_registration_is_rate_limited_per_address(client, db):
    statuses = [register(client).status_code for _ in range(21)]
    assert statuses[:20] == [201] * 20
    assert statuses[20] == 429


def test_registered_client_is_public_and_marked_as_dcr(client, db):
    client_id = _registered_client_id(client)
    application = TenantApplication.objects.get(client_id=client_id)
    assert application.client_type == "public"
    assert application.registration_source == "dcr"
    assert application.tenant is None


# ---- refresh -----------------------------------------------------------------------------------------


# The live ASGI stack runs on other connections: the rows must be committed.
@pytest.mark.django_db(transaction=True)
def test_refresh_token_rotates_and_a_replayed_one_is_refused(client, acme, browser):
    client_id = _registered_client_id(client)
    first = tokens(browser, client_id)
    refreshed = Client().post(
        "/oauth/token/",
        {"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": client_id},
        HTTP_HOST=HOST,
    )
    assert refreshed.status_code == 200, refreshed.content
    second = refreshed.json()
    assert second["refresh_token"] != first["refresh_token"]
    replay = Client().post(
        "/oauth/token/",
        {"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": client_id},
        HTTP_HOST=HOST,
    )
    assert replay.status_code == 400
    reply = async_to_sync(request)(
        "POST",
        "/t/acme/mcp",
        body=rpc("initialize", INIT_PARAMS),
        headers={"authorization": f"Bearer {second['access_token']}"},
    )
    # Reuse of a rotated refresh token revokes the whole family, the new access token included.
    assert reply.status == 401


# The live ASGI stack runs on other connections: the rows must be committed.
@pytest.mark.django_db(transaction=True)
def test_refreshed_token_keeps_its_audience(client, acme, browser):
    client_id = _registered_client_id(client)
    first = tokens(browser, client_id)
    second = (
        Client()
        .post(
            "/oauth/token/",
            {"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": client_id},
            HTTP_HOST=HOST,
        )
        .json()
    )
    reply = async_to_sync(request)(
        "POST",
        "/t/acme/mcp",
        body=rpc("initialize", INIT_PARAMS),
        headers={"authorization": f"Bearer {second['access_token']}"},
    )
    assert reply.status == 200


def _urlencode(query: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    return urlencode(query)
