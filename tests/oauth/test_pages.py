"""The pages: sign-in, connected apps (list and disconnect), all plain HTML forms."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.test import Client

from tests.factories import OAuthClientFactory, access_token_create
from tests.gateway.conftest import INIT_PARAMS, request, rpc
from tests.oauth.conftest import ACME_MCP
from tests.oauth.flow import HOST


def test_sign_in_page_logs_in_and_returns_to_next(member):
    browser = Client()
    page = browser.get("/account/login/?next=/account/apps/")
    assert page.status_code == 200
    assert '<label for="id_username">' in page.content.decode()
    response = browser.post(
        "/account/login/",
        {"username": "alice", "password": "correct horse battery staple", "next": "/account/apps/"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/account/apps/"


def test_connected_apps_needs_sign_in(db):
    response = Client().get("/account/apps/")
    assert response.status_code == 302
    assert response["Location"].startswith("/account/login/")


def test_connected_apps_lists_clients_with_live_tokens_only(member, client_app):
    access_token_create(user=member, application=client_app, resource=[ACME_MCP], scope="mcp:tools")
    stale = OAuthClientFactory(name="Old client")
    access_token_create(user=member, application=stale, resource=[ACME_MCP], expires_in=-10)
    browser = Client()
    browser.force_login(member)
    html = browser.get("/account/apps/").content.decode()
    assert "Claude" in html and ACME_MCP in html and "mcp:tools" in html
    assert "Old client" not in html


def test_other_peoples_connections_are_not_shown(member, client_app):
    from tests.factories import UserFactory

    access_token_create(user=UserFactory(), application=client_app, resource=[ACME_MCP])
    browser = Client()
    browser.force_login(member)
    assert "Claude" not in browser.get("/account/apps/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_disconnecting_an_app_revokes_its_token_at_once(acme, member, client_app):
    token = access_token_create(user=member, application=client_app, resource=[ACME_MCP])
    headers = {"authorization": f"Bearer {token}"}
    assert (
        async_to_sync(request)("POST", "/t/acme/mcp", body=rpc("initialize", INIT_PARAMS), headers=headers).status
        == 200
    )
    browser = Client()
    browser.force_login(member)
    response = browser.post(f"/account/apps/{client_app.pk}/revoke/", follow=True, HTTP_HOST=HOST)
    html = response.content.decode()
    assert "was disconnected" in html
    assert "No apps are connected" in html
    assert (
        async_to_sync(request)("POST", "/t/acme/mcp", body=rpc("initialize", INIT_PARAMS), headers=headers).status
        == 401
    )


def test_disconnect_needs_post(member, client_app):
    browser = Client()
    browser.force_login(member)
    assert browser.get(f"/account/apps/{client_app.pk}/revoke/").status_code == 405
