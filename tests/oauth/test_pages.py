"""The pages: sign-in, consent, connected apps (list and revoke), their headers and their stylesheet."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_grant_model, get_refresh_token_model

from mcp_platform.oauth.models import TenantApplication
from tests.factories import MembershipFactory, OAuthClientFactory, UserFactory, access_token_create
from tests.gateway.conftest import INIT_PARAMS, request, rpc
from tests.oauth.conftest import ACME_MCP, BASE
from tests.oauth.flow import HOST, REDIRECT, Pkce, authorize_query, consent, redirect_params, register, tokens

GLOBEX_MCP = f"{BASE}/t/globex/mcp"


def registered(client: Client, **metadata: Any) -> TenantApplication:
    response = register(client, **metadata)
    assert response.status_code == 201, response.content
    return TenantApplication.objects.get(client_id=response.json()["client_id"])


def consent_page(browser: Client, application: TenantApplication, **query: Any) -> Any:
    query_string = urlencode(authorize_query(application.client_id, Pkce.new(), **query))
    return browser.get(f"/oauth/authorize/?{query_string}", HTTP_HOST=HOST)


def mcp_status(token: str, path: str = "/t/acme/mcp") -> int:
    headers = {"authorization": f"Bearer {token}"}
    reply = async_to_sync(request)("POST", path, body=rpc("initialize", INIT_PARAMS), headers=headers)
    return int(reply.status)


# ---- every page ----------------------------------------------------------------------------------------


def test_pages_carry_the_security_headers_and_no_script(client, acme, browser):
    application = registered(client)
    pages = [
        Client().get("/account/login/"),
        consent_page(browser, application),
        browser.get("/account/apps/"),
    ]
    for page in pages:
        assert page.status_code == 200
        assert page["X-Frame-Options"] == "DENY"
        assert "frame-ancestors 'none'" in page["Content-Security-Policy"]
        assert "default-src 'none'" in page["Content-Security-Policy"]
        assert "no-store" in page["Cache-Control"]
        html = page.content.decode()
        assert re.search(r"<html lang=\"en", html)
        assert "<script" not in html and not re.search(r"\son[a-z]+=", html)
        assert 'href="/static/platform.css"' in html
        assert '<main id="main"' in html and 'class="skip-link" href="#main"' in html


def test_the_stylesheet_is_served_by_the_platform_itself(db):
    response = Client().get("/static/platform.css")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/css")
    assert b":focus-visible" in b"".join(response.streaming_content)


def test_every_colour_the_stylesheet_uses_has_a_value_in_the_light_theme():
    """A custom property defined as itself (``--x: var(--x)``) is invalid, and so is every declaration using it: the
    light theme's fields would lose their borders."""
    css = (Path(__file__).resolve().parents[2] / "static" / "platform.css").read_text()
    light = dict(re.findall(r"(--[\w-]+):\s*([^;]+);", css.split(":root {", 1)[1].split("}", 1)[0]))
    used = set(re.findall(r"var\((--[\w-]+)\)", css))
    assert used <= set(light), f"no light value for {sorted(used - set(light))}"
    assert not [name for name, value in light.items() if f"var({name})" in value], light


# ---- sign-in -------------------------------------------------------------------------------------------


def test_sign_in_page_logs_in_and_returns_to_next(member):
    browser = Client()
    page = browser.get("/account/login/?next=/account/apps/")
    html = page.content.decode()
    assert '<label for="id_username">' in html and 'autocomplete="current-password"' in html
    response = browser.post(
        "/account/login/",
        {"username": "alice", "password": "correct horse battery staple", "next": "/account/apps/"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/account/apps/"


def test_sign_in_names_the_app_waiting_for_consent(client, acme, member):
    application = registered(client, client_name="Cursor")
    authorize = f"/oauth/authorize/?{urlencode(authorize_query(application.client_id, Pkce.new()))}"
    page = Client().get(f"/account/login/?{urlencode({'next': authorize})}")
    assert "to continue to <strong>Cursor</strong>" in page.content.decode()


def test_a_wrong_password_is_announced_and_marks_the_fields(member):
    page = Client().post("/account/login/", {"username": "alice", "password": "nope"})
    html = page.content.decode()
    assert 'role="alert"' in html and 'aria-invalid="true"' in html


def test_sign_out_needs_post_and_a_csrf_token(member):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(member)
    assert browser.post("/account/logout/").status_code == 403
    assert "_auth_user_id" in browser.session


# ---- consent -------------------------------------------------------------------------------------------


def test_consent_page_shows_the_app_the_workspace_where_it_returns_and_the_scopes(client, acme, browser):
    application = registered(client, client_name="Cursor", logo_uri="https://cursor.example/logo.png")
    html = consent_page(browser, application).content.decode()
    assert 'Cursor</span> wants to access <span class="consent__tenant">Acme</span>' in html
    assert ACME_MCP in html
    assert "127.0.0.1:53682" in html  # REDIRECT's host and port
    assert "Registered itself automatically (dynamic registration)" in html and "Unverified app" in html
    assert "See and run this workspace&#x27;s tools" in html and "Use this workspace&#x27;s prompts" in html
    assert 'src="https://cursor.example/logo.png"' in html and 'referrerpolicy="no-referrer"' in html
    assert 'name="allow"' in html


def test_consent_form_may_only_go_here_and_to_the_clients_redirect_target(client, acme, browser):
    page = consent_page(browser, registered(client))
    assert "form-action 'self' http://127.0.0.1:53682;" in page["Content-Security-Policy"]


def test_an_app_registered_by_the_tenants_administrators_says_so_and_shows_its_initial(acme, browser):
    application = OAuthClientFactory(name="acme reports", tenant=acme, redirect_uris=REDIRECT)
    html = consent_page(browser, application).content.decode()
    assert "Registered by an administrator of Acme." in html
    assert "Unverified app" not in html
    assert '<span class="app-mark__initial">A</span>' in html and "<img" not in html


def test_an_app_registered_by_the_platforms_administrators_says_so(acme, browser):
    html = consent_page(browser, OAuthClientFactory(redirect_uris=REDIRECT)).content.decode()
    assert "Registered by an administrator of this platform." in html


def test_an_app_described_by_a_metadata_document_says_where(acme, browser):
    document = "https://app.example/oauth/client.json"
    application = OAuthClientFactory(
        client_id=document, redirect_uris=REDIRECT, registration_source=TenantApplication.RegistrationSource.CIMD
    )
    assert f"Described by its metadata document at {document}." in consent_page(browser, application).content.decode()


def test_a_client_name_is_shown_as_text(client, acme, browser):
    application = registered(client, client_name='<img src=x onerror="alert(1)">')
    html = consent_page(browser, application).content.decode()
    assert "<img src=x" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


# ---- connected apps ------------------------------------------------------------------------------------


def test_connected_apps_needs_sign_in(db):
    response = Client().get("/account/apps/")
    assert response.status_code == 302
    assert response["Location"].startswith("/account/login/")


def test_connected_apps_lists_each_workspace_with_scopes_and_dates(client, acme, globex, member, browser):
    MembershipFactory(user=member, tenant=globex)
    application = registered(client, client_name="Claude")
    tokens(browser, application.client_id, resource=ACME_MCP)
    tokens(browser, application.client_id, resource=GLOBEX_MCP)
    html = browser.get("/account/apps/").content.decode()
    assert html.count('<h2 id="connection-') == 2
    assert "on <strong>Acme</strong>" in html and "on <strong>Globex</strong>" in html
    assert ACME_MCP in html and GLOBEX_MCP in html
    assert "See and run this workspace&#x27;s tools" in html
    assert html.count("<time datetime=") == 4  # authorized and last used, twice
    assert 'aria-label="Revoke Claude\'s access to Acme"' in html


def test_connected_apps_page_queries_do_not_grow_with_connections(client, acme, globex, member, browser):
    MembershipFactory(user=member, tenant=globex)
    tokens(browser, registered(client, client_name="Claude").client_id, resource=ACME_MCP)

    def page_queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert browser.get("/account/apps/").status_code == 200
        return len(captured)

    one = page_queries()
    tokens(browser, registered(client, client_name="Cursor").client_id, resource=GLOBEX_MCP)
    assert page_queries() == one


def test_expired_and_other_peoples_tokens_are_not_connections(member, client_app):
    access_token_create(
        user=member, application=OAuthClientFactory(name="Old client"), resource=[ACME_MCP], expires_in=-10
    )
    access_token_create(user=UserFactory(), application=client_app, resource=[ACME_MCP])
    browser = Client()
    browser.force_login(member)
    html = browser.get("/account/apps/").content.decode()
    assert "Old client" not in html and "Claude" not in html
    assert "No apps are connected" in html


def test_a_connection_lives_on_while_its_refresh_token_can_mint_access(client, acme, browser):
    issued = tokens(browser, registered(client, client_name="Claude").client_id)
    get_access_token_model().objects.update(expires=timezone.now() - timedelta(hours=1))
    assert "Claude" in browser.get("/account/apps/").content.decode()
    assert mcp_status(issued["access_token"]) == 401
    # Past the refresh lifetime the refresh token is dead too (django-oauth-toolkit's rule), and so is the connection.
    get_access_token_model().objects.update(expires=timezone.now() - timedelta(days=31))
    assert "Claude" not in browser.get("/account/apps/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_revoking_ends_access_and_refresh_for_that_workspace_only(client, acme, globex, member, browser):
    MembershipFactory(user=member, tenant=globex)
    application = registered(client, client_name="Claude")
    acme_tokens = tokens(browser, application.client_id, resource=ACME_MCP)
    globex_tokens = tokens(browser, application.client_id, resource=GLOBEX_MCP)
    assert mcp_status(acme_tokens["access_token"]) == 200

    response = browser.post(
        f"/account/apps/{application.pk}/revoke/", {"resource": ACME_MCP}, follow=True, HTTP_HOST=HOST
    )
    html = response.content.decode()
    assert "Access revoked" in html and 'role="status"' in html
    assert "on <strong>Acme</strong>" not in html and "on <strong>Globex</strong>" in html
    assert mcp_status(acme_tokens["access_token"]) == 401
    assert mcp_status(globex_tokens["access_token"], "/t/globex/mcp") == 200
    refused = Client().post(
        "/oauth/token/",
        {
            "grant_type": "refresh_token",
            "refresh_token": acme_tokens["refresh_token"],
            "client_id": application.client_id,
        },
        HTTP_HOST=HOST,
    )
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    assert get_refresh_token_model().objects.filter(revoked__isnull=True).count() == 1  # Globex's


def test_revoking_also_drops_a_code_not_yet_exchanged(client, acme, browser):
    application = registered(client)
    redirect_params(consent(browser, authorize_query(application.client_id, Pkce.new())))
    assert get_grant_model().objects.count() == 1
    browser.post(f"/account/apps/{application.pk}/revoke/", {"resource": ACME_MCP})
    assert get_grant_model().objects.count() == 0


def test_revoking_someone_elses_connection_changes_nothing(client, acme, browser):
    other = UserFactory()
    application = registered(client)
    token = access_token_create(user=other, application=application, resource=[ACME_MCP])
    browser.post(f"/account/apps/{application.pk}/revoke/", {"resource": ACME_MCP})
    assert get_access_token_model().objects.filter(user=other).count() == 1
    assert token


def test_revoke_needs_post_a_workspace_and_a_csrf_token(member, client_app):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(member)
    assert browser.get(f"/account/apps/{client_app.pk}/revoke/").status_code == 405
    access_token_create(user=member, application=client_app, resource=[ACME_MCP])
    assert browser.post(f"/account/apps/{client_app.pk}/revoke/", {"resource": ACME_MCP}).status_code == 403
    assert get_access_token_model().objects.count() == 1
    lenient = Client()
    lenient.force_login(member)
    assert lenient.post(f"/account/apps/{client_app.pk}/revoke/").status_code == 400


@pytest.mark.django_db(transaction=True)
def test_a_request_with_the_token_is_its_last_use_recorded_to_the_minute(acme, member, client_app):
    token = access_token_create(user=member, application=client_app, resource=[ACME_MCP])
    long_ago = timezone.now() - timedelta(minutes=10)
    get_access_token_model().objects.update(updated=long_ago)  # a queryset update leaves auto_now alone

    assert mcp_status(token) == 200
    recorded = get_access_token_model().objects.get().updated
    assert recorded > long_ago + timedelta(minutes=9)
    assert mcp_status(token) == 200
    assert get_access_token_model().objects.get().updated == recorded  # no second write within the minute

    browser = Client()
    browser.force_login(member)
    assert f'<time datetime="{recorded.isoformat()}' in browser.get("/account/apps/").content.decode()
