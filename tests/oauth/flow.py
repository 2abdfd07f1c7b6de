"""Driving the authorization server like a client and a person would, through Django's test client."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from django.test import Client

HOST = "127.0.0.1:8000"
REDIRECT = "http://127.0.0.1:53682/callback"


@dataclass
class Pkce:
    verifier: str
    challenge: str

    @classmethod
    def new(cls) -> Pkce:
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode()).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode())


def register(client: Client, *, meta: dict[str, str] | None = None, **metadata: Any) -> Any:
    """POST a registration with ``metadata``; ``meta`` adds request META (REMOTE_ADDR, HTTP_* headers)."""
    body = {
        "client_name": "Test client",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    return client.post("/oauth/register/", body, content_type="application/json", HTTP_HOST=HOST, **(meta or {}))


def authorize_query(client_id: str, pkce: Pkce, **overrides: Any) -> dict[str, Any]:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "scope": "mcp:tools mcp:resources mcp:prompts",
        "state": "xyz",
        "code_challenge": pkce.challenge,
        "code_challenge_method": "S256",
        "resource": "http://127.0.0.1:8000/t/acme/mcp",
    }
    query.update(overrides)
    return {k: v for k, v in query.items() if v is not None}


def consent(browser: Client, query: dict[str, Any], *, allow: bool = True) -> Any:
    """Open the consent page and press Allow or Deny; returns the POST response."""
    page = browser.get(f"/oauth/authorize/?{urlencode(query)}", HTTP_HOST=HOST)
    assert page.status_code == 200, page.content
    form = page.context["form"]
    data = {name: value for name, value in form.initial.items() if value is not None}
    if allow:
        data["allow"] = "on"
    return browser.post("/oauth/authorize/", data, HTTP_HOST=HOST)


def redirect_params(response: Any) -> dict[str, str]:
    assert response.status_code == 302, response.content
    return {k: v[0] for k, v in parse_qs(urlsplit(response["Location"]).query).items()}


def exchange(client: Client, *, client_id: str, code: str, verifier: str, **extra: Any) -> Any:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": "http://127.0.0.1:8000/t/acme/mcp",
        **extra,
    }
    return client.post("/oauth/token/", {k: v for k, v in data.items() if v is not None}, HTTP_HOST=HOST)


def tokens(browser: Client, client_id: str, **query: Any) -> dict[str, Any]:
    """The whole flow as a person and a client go through it: consent, then the code exchange."""
    pkce = Pkce.new()
    query = authorize_query(client_id, pkce, **query)
    code = redirect_params(consent(browser, query))["code"]
    response = exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier, resource=query["resource"])
    assert response.status_code == 200, response.content
    issued: dict[str, Any] = response.json()
    return issued


def client_credentials(client_id: str, secret: str, **data: str) -> Any:
    """A machine client's token request (``client_credentials``, HTTP Basic authentication) with ``data``."""
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    return Client().post(
        "/oauth/token/",
        {"grant_type": "client_credentials", **data},
        HTTP_HOST=HOST,
        HTTP_AUTHORIZATION=f"Basic {basic}",
    )
