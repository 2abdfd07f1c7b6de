"""Discovery: OpenID Connect and RFC 8414 documents agree, the issuer is where they are served, ID tokens verify."""

from __future__ import annotations

import json
import stat
from typing import Any

from django.test import Client
from jwcrypto import jwk, jwt

from mcp_platform import settings as platform_settings_module
from tests.oauth.conftest import BASE
from tests.oauth.flow import HOST, Pkce, authorize_query, consent, exchange, redirect_params, register

OIDC = "/.well-known/openid-configuration"
RFC8414 = "/.well-known/oauth-authorization-server"


def _documents(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
    return client.get(OIDC, HTTP_HOST=HOST).json(), client.get(RFC8414, HTTP_HOST=HOST).json()


def test_openid_configuration_issuer_is_where_it_is_served(client, db):
    response = client.get(OIDC, HTTP_HOST=HOST)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json()["issuer"] == BASE


def test_both_discovery_documents_say_the_same_wherever_both_speak(client, db):
    openid, oauth = _documents(client)
    shared = set(openid) & set(oauth)
    assert {"issuer", "authorization_endpoint", "token_endpoint", "registration_endpoint", "jwks_uri"} <= shared
    assert {key: openid[key] for key in shared} == {key: oauth[key] for key in shared}
    assert openid["code_challenge_methods_supported"] == ["S256"]
    assert openid["response_types_supported"] == ["code"]
    assert openid["client_id_metadata_document_supported"] is True
    assert openid["userinfo_endpoint"] == f"{BASE}/oauth/userinfo/"
    assert "RS256" in openid["id_token_signing_alg_values_supported"]


def test_issuer_follows_the_public_base_url(client, db, settings):
    public = "https://mcp.example.com"
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "PUBLIC_BASE_URL": public}
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": public}
    openid, oauth = _documents(client)
    assert openid["issuer"] == oauth["issuer"] == public
    assert openid["token_endpoint"] == oauth["token_endpoint"] == f"{public}/oauth/token/"


def test_authorization_server_metadata_offers_what_mcp_clients_need(client, db):
    document = client.get(RFC8414, HTTP_HOST=HOST).json()
    assert document["grant_types_supported"] == [
        "authorization_code",
        "refresh_token",
        "client_credentials",
        "urn:ietf:params:oauth:grant-type:token-exchange",
    ]
    assert document["client_id_metadata_document_supported"] is True
    assert document["jwks_uri"] == f"{BASE}/oauth/jwks/"


def test_id_token_is_signed_with_the_published_key_for_the_issuer(client, acme, member):
    client_id = register(client).json()["client_id"]
    browser = Client()
    browser.force_login(member)
    pkce = Pkce.new()
    query = authorize_query(client_id, pkce, scope="openid mcp:tools", nonce="n-0S6_WzA2Mj")
    code = redirect_params(consent(browser, query))["code"]
    tokens = exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier).json()
    keys = jwk.JWKSet.from_json(client.get("/oauth/jwks/", HTTP_HOST=HOST).content)
    claims = json.loads(jwt.JWT(jwt=tokens["id_token"], key=keys, algs=["RS256"]).claims)
    assert claims["iss"] == client.get(OIDC, HTTP_HOST=HOST).json()["issuer"]
    assert claims["aud"] == client_id
    assert claims["sub"] == str(member.pk)
    assert claims["nonce"] == "n-0S6_WzA2Mj"


def test_a_request_naming_no_scope_gets_the_mcp_scopes_and_no_id_token(client, acme, member):
    client_id = register(client).json()["client_id"]
    browser = Client()
    browser.force_login(member)
    pkce = Pkce.new()
    code = redirect_params(consent(browser, authorize_query(client_id, pkce, scope=None)))["code"]
    tokens = exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier).json()
    assert set(tokens["scope"].split()) == {"mcp:tools", "mcp:resources", "mcp:prompts"}
    assert "id_token" not in tokens


def test_embedded_signing_key_is_generated_once_and_private(tmp_path, monkeypatch):
    monkeypatch.setattr(platform_settings_module, "VAR_DIR", tmp_path)
    first = platform_settings_module._embedded_oidc_key()
    assert "PRIVATE KEY" in first
    assert platform_settings_module._embedded_oidc_key() == first
    key_file = tmp_path / "oidc_rsa_private_key.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_a_generated_key_is_flagged_where_several_processes_serve(settings, tmp_path, monkeypatch):
    from mcp_platform.oauth.checks import check_signing_key_is_shared

    monkeypatch.setattr(platform_settings_module, "VAR_DIR", tmp_path)
    generated = platform_settings_module._embedded_oidc_key()
    settings.VAR_DIR = tmp_path
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_RSA_PRIVATE_KEY": generated}
    settings.REDIS_URL = ""
    assert check_signing_key_is_shared(None) == []
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    assert [message.id for message in check_signing_key_is_shared(None)] == ["mcp_platform.oauth.W001"]
