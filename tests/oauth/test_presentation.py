"""How a client presents itself: only safe logos are kept and shown, and the consent form's CSP target."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.test import Client

from mcp_platform.oauth.headers import form_target
from mcp_platform.oauth.models import MAX_LOGO_URI_LENGTH, TenantApplication, safe_logo_uri
from mcp_platform.oauth.presentation import client_face, redirect_host
from tests.factories import OAuthClientFactory
from tests.oauth.flow import register


@pytest.mark.parametrize(
    "uri",
    [
        "https://cursor.example/logo.png",
        "https://cdn.example:8443/a/b.svg?v=2",
        "https://[2001:db8::1]/logo.png",
        "https://example.com/" + "a" * (MAX_LOGO_URI_LENGTH - len("https://example.com/")),
    ],
)
def test_https_logos_are_kept(uri):
    assert safe_logo_uri(uri) == uri


@pytest.mark.parametrize(
    "uri",
    [
        None,
        "",
        42,
        "http://cursor.example/logo.png",  # mixed content on an https page
        "//cursor.example/logo.png",
        "/static/logo.png",
        "data:image/png;base64,AAAA",
        "javascript:alert(1)",
        "https://user:secret@cursor.example/logo.png",
        'https://cursor.example/logo.png" onerror="alert(1)',
        "https://cursor.example/logo png",
        "https://cursor.example/\nlogo.png",
        "https://cursor.example:99999/logo.png",
        "https:///logo.png",
        "https://example.com/" + "a" * MAX_LOGO_URI_LENGTH,
    ],
)
def test_unsafe_logos_are_dropped(uri):
    assert safe_logo_uri(uri) is None


def test_an_admin_cannot_save_an_unsafe_logo(db):
    application = OAuthClientFactory.build(logo_uri="http://cursor.example/logo.png")
    with pytest.raises(ValidationError) as raised:
        application.full_clean()
    assert "logo_uri" in raised.value.message_dict


@pytest.mark.parametrize(
    ("logo_uri", "kept"),
    [
        ("https://cursor.example/logo.png", "https://cursor.example/logo.png"),
        ("http://cursor.example/logo.png", ""),
        ("javascript:alert(1)", ""),
        (["https://cursor.example/logo.png"], ""),
    ],
)
def test_registration_keeps_only_a_safe_logo(db, logo_uri, kept):
    cache.clear()
    response = register(Client(), logo_uri=logo_uri)
    assert response.status_code == 201, response.content
    assert response.json().get("logo_uri", "") == kept
    assert TenantApplication.objects.get(client_id=response.json()["client_id"]).logo_uri == kept


def test_a_face_has_a_name_and_initial_even_when_the_client_gave_none(db):
    face = client_face(OAuthClientFactory.build(name="  "))
    assert (face.name, face.initial, face.logo_uri) == ("Unnamed app", "U", None)
    assert client_face(OAuthClientFactory.build(name="42 tools")).initial == "4"
    assert client_face(OAuthClientFactory.build(name="élan")).initial == "É"


@pytest.mark.parametrize(
    ("redirect_uri", "host", "target"),
    [
        ("http://127.0.0.1:3030/callback", "127.0.0.1:3030", "http://127.0.0.1:3030"),
        ("http://[::1]:3030/callback", "[::1]:3030", "http://[::1]:3030"),
        ("https://app.example/oauth/cb", "app.example", "https://app.example"),
        ("cursor://anysphere.cursor-retrieval/oauth/callback", "cursor:", "cursor:"),
        ("vscode:/callback", "vscode:", "vscode:"),
    ],
)
def test_redirect_host_and_form_target(redirect_uri, host, target):
    assert redirect_host(redirect_uri) == host
    assert form_target(redirect_uri) == target


@pytest.mark.parametrize(
    "redirect_uri",
    ["https://app.example;script-src *", "http://a b/", "x y:/cb", "https://app.example:99999/"],
)
def test_a_target_that_does_not_parse_cleanly_stays_out_of_the_policy(redirect_uri):
    assert form_target(redirect_uri) is None
