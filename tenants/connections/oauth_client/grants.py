"""Getting and ending a person's grant at an upstream authorization server: dynamic registration (RFC 7591), PKCE
and the authorization URL, the code exchange and refreshes at the token endpoint (public client, or HTTP Basic for a
confidential one), revocation (RFC 7009)."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote_plus, urlencode, urlsplit, urlunsplit

from tenants.connections.oauth_client.servers import AuthServer
from tenants.connections.oauth_client.wire import (
    MAX_URL_LENGTH,
    VSCHARS,
    OAuthClientError,
    RefreshRefused,
    json_object,
    oauth_error,
    request,
    scope_value,
    shown_url,
)

GRANT_TYPES = ("authorization_code", "refresh_token")


@dataclass(frozen=True, slots=True)
class RegisteredClient:
    """What dynamic registration gave: the client id, and a secret when the server insisted on one (the caller
    seals it). ``client_secret_expires_at``: seconds since the epoch, None or 0 for never."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    client_secret_expires_at: int | None = None
    token_endpoint_auth_method: str = "none"


@dataclass(frozen=True, slots=True)
class TokenSet:
    """What a token endpoint issued. ``refresh_token`` None on a refresh: keep the one you had (the server did not
    rotate it). ``expires_in`` None: the server did not say."""

    access_token: str = field(repr=False)
    refresh_token: str | None = field(repr=False)
    expires_in: int | None
    scope: str | None
    token_type: str = "Bearer"


# ---- registration and the authorization request ----------------------------------------------------------------------


async def register_client(
    *, tenant_id: int, server: AuthServer, redirect_uri: str, client_name: str, scope: str | None = None
) -> RegisteredClient:
    """Register the platform with ``server`` (RFC 7591) as a public client of the code grant with refresh tokens,
    for ``redirect_uri``.

    Raises ``OAuthClientError`` (no registration endpoint, refused with the server's error code, junk answer).
    """
    if server.registration_endpoint is None:
        raise OAuthClientError(f"{server.issuer} does not offer dynamic client registration")
    where = shown_url(server.registration_endpoint)
    metadata: dict[str, Any] = {
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": list(GRANT_TYPES),
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    if scope:
        metadata["scope"] = scope
    answer = await request(
        tenant_id, "POST", server.registration_endpoint, what="registering with the authorization server", json=metadata
    )
    if answer.status not in (200, 201):
        code, description = oauth_error(answer.body, ())
        reason = code or f"HTTP {answer.status}"
        raise OAuthClientError(f"{where} refused the registration: {reason}{description}", code)
    what = f"the registration answer of {where}"
    document = json_object(answer.body, what)
    client_id = document.get("client_id")
    if not isinstance(client_id, str) or not client_id or len(client_id) > MAX_URL_LENGTH:
        raise OAuthClientError(f"{what} has no client_id")
    secret = document.get("client_secret")
    if secret is not None and (not isinstance(secret, str) or not VSCHARS.match(secret)):
        raise OAuthClientError(f"{what}: client_secret is not a string")
    expires_at = document.get("client_secret_expires_at")
    if expires_at is not None and (not isinstance(expires_at, int) or isinstance(expires_at, bool)):
        raise OAuthClientError(f"{what}: client_secret_expires_at is not a number")
    registered_uris = document.get("redirect_uris", [redirect_uri])
    if not isinstance(registered_uris, list) or redirect_uri not in registered_uris:
        raise OAuthClientError(f"{what} registered other redirect URIs than the platform's")
    method = document.get("token_endpoint_auth_method")
    if not isinstance(method, str):
        method = "none" if secret is None else "client_secret_basic"
    return RegisteredClient(client_id, secret, expires_at, method)


def new_pkce() -> tuple[str, str]:
    """A PKCE code verifier (64 characters, 384 random bits) and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorization_url(
    server: AuthServer,
    *,
    client_id: str,
    redirect_uri: str,
    state: str,
    code_challenge: str,
    scope: str | None = None,
    resource: str | None = None,
) -> str:
    """Where to send the person: the authorization endpoint with a code request, PKCE S256, ``state``, and the
    RFC 8707 ``resource`` when given. A query the endpoint already has is kept, minus the parameters set here.

    Raises ``OAuthClientError`` when the server lists its PKCE methods and S256 is not among them.
    """
    if server.code_challenge_methods and "S256" not in server.code_challenge_methods:
        raise OAuthClientError(f"{server.issuer} does not support PKCE with S256, which the platform requires")
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": code_challenge,
        "code_challenge_method": "S256",
    }
    if scope:
        params["scope"] = scope
    if resource:
        params["resource"] = resource
    parts = urlsplit(server.authorization_endpoint)
    kept = [(key, value) for key, value in parse_qsl(parts.query, keep_blank_values=True) if key not in params]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode([*kept, *params.items()]), ""))


# ---- the token endpoint ----------------------------------------------------------------------------------------------


def _client_auth(form: dict[str, str], client_id: str, client_secret: str | None) -> dict[str, str]:
    """Headers authenticating the client: none for a public client (its id goes in the body), else HTTP Basic
    with id and secret form-encoded first (RFC 6749 §2.3.1)."""
    if client_secret is None:
        form["client_id"] = client_id
        return {}
    pair = f"{quote_plus(client_id)}:{quote_plus(client_secret)}"
    return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}


def _token_set(body: bytes, what: str) -> TokenSet:
    document = json_object(body, what)
    access_token = document.get("access_token")
    if not isinstance(access_token, str) or not VSCHARS.match(access_token):
        raise OAuthClientError(f"{what} has no access_token")
    refresh_token = document.get("refresh_token")
    if refresh_token is not None and (not isinstance(refresh_token, str) or not VSCHARS.match(refresh_token)):
        raise OAuthClientError(f"{what}: refresh_token is not a string")
    token_type = document.get("token_type", "Bearer")
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        raise OAuthClientError(f"{what}: the token is not a Bearer token")
    expires_in = document.get("expires_in")
    if isinstance(expires_in, str) and expires_in.isdigit() and len(expires_in) < 12:
        expires_in = int(expires_in)  # some servers send the number as a string
    if expires_in is not None and (not isinstance(expires_in, int) or isinstance(expires_in, bool) or expires_in < 0):
        raise OAuthClientError(f"{what}: expires_in is not a number of seconds")
    scope = scope_value(document.get("scope"), f"{what}: scope")
    return TokenSet(access_token, refresh_token, expires_in, scope, "Bearer")


async def _token_request(
    tenant_id: int,
    server: AuthServer,
    form: dict[str, str],
    *,
    client_id: str,
    client_secret: str | None,
    resource: str | None,
    what: str,
) -> TokenSet:
    if resource:
        form["resource"] = resource
    headers = _client_auth(form, client_id, client_secret)
    carried = (form.get("code"), form.get("code_verifier"), form.get("refresh_token"), client_secret)
    sensitive = tuple(value for value in carried if value)
    where = shown_url(server.token_endpoint)
    answer = await request(tenant_id, "POST", server.token_endpoint, what=what, data=form, headers=headers)
    if answer.status == 200:
        return _token_set(answer.body, f"the token answer of {where}")
    if 300 <= answer.status < 400:
        raise OAuthClientError(f"{what}: {where} answered with a redirect (HTTP {answer.status}), not followed")
    code, description = oauth_error(answer.body, sensitive)
    message = f"{what}: {where} refused: {code or f'HTTP {answer.status}'}{description}"
    if code == "invalid_grant" and "refresh_token" in form:
        raise RefreshRefused(message, code)
    raise OAuthClientError(message, code)


async def exchange_code(
    *,
    tenant_id: int,
    server: AuthServer,
    client_id: str,
    code: str,
    code_verifier: str,
    redirect_uri: str,
    resource: str | None = None,
    client_secret: str | None = None,
) -> TokenSet:
    """Trade an authorization code for tokens (RFC 6749 §4.1.3 with PKCE and RFC 8707 ``resource``). With
    ``client_secret`` the client authenticates with HTTP Basic, else as a public client.

    Raises ``OAuthClientError`` (refused with the server's error code, unreachable, junk answer).
    """
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": code_verifier,
    }
    return await _token_request(
        tenant_id,
        server,
        form,
        client_id=client_id,
        client_secret=client_secret,
        resource=resource,
        what="exchanging the authorization code",
    )


async def refresh_tokens(
    *,
    tenant_id: int,
    server: AuthServer,
    client_id: str,
    refresh_token: str,
    scope: str | None = None,
    resource: str | None = None,
    client_secret: str | None = None,
) -> TokenSet:
    """New tokens for a refresh token (RFC 6749 §6). Keep the old refresh token when the answer has none.

    Raises ``RefreshRefused`` when the server answers ``invalid_grant`` (the person must connect again), else
    ``OAuthClientError``.
    """
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    if scope:
        form["scope"] = scope
    return await _token_request(
        tenant_id,
        server,
        form,
        client_id=client_id,
        client_secret=client_secret,
        resource=resource,
        what="refreshing the access token",
    )


async def revoke_token(
    *,
    tenant_id: int,
    server: AuthServer,
    client_id: str,
    refresh_token: str | None = None,
    access_token: str | None = None,
    client_secret: str | None = None,
) -> bool:
    """Revoke the tokens at the server's revocation endpoint (RFC 7009): the refresh token first (which ends its
    access tokens on most servers), then the access token. Never raises for an upstream that fails.

    Returns whether the server accepted every revocation; False when it offers no endpoint or there was no token.
    """
    if server.revocation_endpoint is None:
        return False
    accepted: list[bool] = []
    for token, hint in ((refresh_token, "refresh_token"), (access_token, "access_token")):
        if not token:
            continue
        form = {"token": token, "token_type_hint": hint}
        headers = _client_auth(form, client_id, client_secret)
        try:
            answer = await request(
                tenant_id, "POST", server.revocation_endpoint, what="revoking a token", data=form, headers=headers
            )
        except OAuthClientError:
            accepted.append(False)
            continue
        accepted.append(answer.status == 200)
    return bool(accepted) and all(accepted)
