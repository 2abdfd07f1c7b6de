"""The OAuth 2.1 client the platform is towards upstream authorization servers, for people's connections: discovery
(RFC 9728 resource metadata, RFC 8414 and OpenID Connect server metadata), dynamic registration (RFC 7591), PKCE
authorization URLs, code exchange, refresh, revocation (RFC 7009). Every request goes through the outbound door, and
what an upstream answers is bounded in size and time and checked before it is used.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote_plus, urlencode, urlsplit, urlunsplit

import httpx

from mcp_infra.outbound import OutboundRefused, OutboundResponseTooLarge, outbound_client, read_capped

RESPONSE_LIMIT = 64 * 1024
# Each request ends within this, headers and body together (an upstream that drips bytes included).
REQUEST_SECONDS = 10.0
CONNECT_SECONDS = 5.0
MAX_URL_LENGTH = 2048
MAX_DESCRIPTION = 200
GRANT_TYPES = ("authorization_code", "refresh_token")
# The unauthenticated request that makes an MCP server answer with its challenge (any method would do: the 401
# comes before the body is read); a ping, so that a server asking for nothing does nothing either.
PROBE_BODY = b'{"jsonrpc": "2.0", "id": 0, "method": "ping"}'
PROBE_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_AUTH_PARAM = re.compile(rf'\s*,?\s*({_TOKEN})\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)')
_AUTH_SCHEME = re.compile(rf"\s*,?\s*({_TOKEN})(?=[\s,]|$)")
# RFC 6749 appendix A: scope tokens, error codes, and the characters tokens are made of.
_SCOPE = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+(?: [\x21\x23-\x5b\x5d-\x7e]+)*$")
_ERROR_CODE = re.compile(r"^[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}$")
_VSCHARS = re.compile(r"^[\x20-\x7e]+$")


class OAuthClientError(Exception):
    """An upstream authorization server could not be used: unreachable, refusing, or answering what cannot be used.

    ``error_code`` is the OAuth error code it answered (``invalid_grant``, ``invalid_client``...), if any. Messages
    name URLs without their query and never quote a token or a secret.
    """

    def __init__(self, message: str, error_code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code


class RefreshRefused(OAuthClientError):
    """The server refused the refresh token (``invalid_grant``: expired, revoked, replayed): only the person can
    connect again."""


# ---- what the client knows of a server, a registration, a grant ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuthServer:
    """An authorization server as its metadata describes it (or as an administrator entered it). Checked when made:
    URLs are http(s), the issuer has no query or fragment; raises ``OAuthClientError`` otherwise."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None = None
    revocation_endpoint: str | None = None
    scopes_supported: tuple[str, ...] = ()
    # Empty: the server did not say (manually entered servers); PKCE S256 is used all the same.
    code_challenge_methods: tuple[str, ...] = ()
    client_id_metadata_document_supported: bool = False

    def __post_init__(self) -> None:
        _issuer(self.issuer, "issuer")
        for name in ("authorization_endpoint", "token_endpoint"):
            _http_url(getattr(self, name), name)
        for name in ("registration_endpoint", "revocation_endpoint"):
            if getattr(self, name) is not None:
                _http_url(getattr(self, name), name)
        for name in ("scopes_supported", "code_challenge_methods"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not all(isinstance(item, str) for item in value):
                raise OAuthClientError(f"{name} must be a list of strings")
        if not isinstance(self.client_id_metadata_document_supported, bool):
            raise OAuthClientError("client_id_metadata_document_supported must be true or false")

    def to_json(self) -> dict[str, Any]:
        """The server as a JSON object (for a JSON field); ``from_json`` reads it back."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": self.authorization_endpoint,
            "token_endpoint": self.token_endpoint,
            "registration_endpoint": self.registration_endpoint,
            "revocation_endpoint": self.revocation_endpoint,
            "scopes_supported": list(self.scopes_supported),
            "code_challenge_methods": list(self.code_challenge_methods),
            "client_id_metadata_document_supported": self.client_id_metadata_document_supported,
        }

    @classmethod
    def from_json(cls, value: Any) -> AuthServer:
        """The server ``to_json`` wrote. Raises ``OAuthClientError`` for anything else."""
        if not isinstance(value, dict):
            raise OAuthClientError("a stored authorization server must be a JSON object")
        return cls(
            issuer=value.get("issuer"),  # type: ignore[arg-type]  # checked by __post_init__
            authorization_endpoint=value.get("authorization_endpoint"),  # type: ignore[arg-type]
            token_endpoint=value.get("token_endpoint"),  # type: ignore[arg-type]
            registration_endpoint=value.get("registration_endpoint"),
            revocation_endpoint=value.get("revocation_endpoint"),
            scopes_supported=_strings(value, "scopes_supported"),
            code_challenge_methods=_strings(value, "code_challenge_methods"),
            client_id_metadata_document_supported=value.get("client_id_metadata_document_supported", False),
        )


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
    token_type: str


# ---- checks of what an upstream says --------------------------------------------------------------------------------


def _http_url(value: Any, what: str) -> str:
    """``value`` when it is an absolute http(s) URL of sensible length, without fragment or blanks."""
    problem = f"{what} is not an http(s) URL"
    if not isinstance(value, str) or not value or len(value) > MAX_URL_LENGTH or not value.isascii():
        raise OAuthClientError(problem)
    if any(ord(c) <= 32 or ord(c) == 127 for c in value):
        raise OAuthClientError(problem)
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (a port that is no number raises here)
    except ValueError:
        raise OAuthClientError(problem) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or parts.fragment or "#" in value:
        raise OAuthClientError(problem)
    return value


def _issuer(value: Any, what: str) -> str:
    issuer = _http_url(value, what)
    if urlsplit(issuer).query or "?" in issuer:
        raise OAuthClientError(f"{what} must have no query (RFC 8414 §2)")
    return issuer


def _strings(document: dict[str, Any], key: str) -> tuple[str, ...]:
    value = document.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise OAuthClientError(f"{key} must be a list of strings")
    return tuple(value)


def _flag(document: dict[str, Any], key: str) -> bool:
    value = document.get(key, False)
    if not isinstance(value, bool):
        raise OAuthClientError(f"{key} must be true or false")
    return value


def _scope(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > RESPONSE_LIMIT or not _SCOPE.match(value):
        raise OAuthClientError(f"{what} is not a list of scopes separated by spaces")
    return value


def _where(url: str) -> str:
    """A URL as messages show it: no user info, no query."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _canonical(url: str) -> str:
    """``url`` with scheme and host in lower case, the default port dropped and no terminating slash: how two
    spellings of one resource identifier compare."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    port = parts.port
    netloc = host if port in (None, {"http": 80, "https": 443}.get(scheme)) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _json_object(body: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser's depth
        raise OAuthClientError(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise OAuthClientError(f"{what} is not a JSON object")
    return value


# ---- requests through the outbound door -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    headers: httpx.Headers
    body: bytes


async def _request(
    tenant_id: int,
    method: str,
    url: str,
    *,
    what: str,
    read_body: bool = True,
    **options: Any,
) -> _Answer:
    """One request through the door: redirects not followed, the body capped, the whole exchange timed.

    Raises ``OAuthClientError`` saying ``what`` failed where (the URL without its query) and why.
    """
    where = _where(url)
    headers = {"Accept": "application/json", **options.pop("headers", {})}
    timeout = httpx.Timeout(REQUEST_SECONDS, connect=CONNECT_SECONDS)
    try:
        async with asyncio.timeout(REQUEST_SECONDS):
            async with outbound_client(tenant_id=tenant_id).stream(
                method, url, headers=headers, timeout=timeout, follow_redirects=False, **options
            ) as response:
                body = await read_capped(response, RESPONSE_LIMIT) if read_body else b""
    except (TimeoutError, httpx.TimeoutException):
        raise OAuthClientError(f"{what}: {where} did not answer within {REQUEST_SECONDS:g} s") from None
    except OutboundResponseTooLarge:
        raise OAuthClientError(f"{what}: {where} answered more than {RESPONSE_LIMIT // 1024} KiB") from None
    except OutboundRefused as exc:
        raise OAuthClientError(f"{what}: {exc}") from None
    except httpx.HTTPError as exc:
        raise OAuthClientError(f"{what}: could not reach {where} ({type(exc).__name__})") from None
    return _Answer(response.status_code, response.headers, body)


def _oauth_error(body: bytes, sensitive: tuple[str, ...]) -> tuple[str | None, str]:
    """The OAuth error code of an error answer (RFC 6749 §5.2, RFC 7591 §3.2.2) and a description to show after it:
    printable, short, and dropped when it repeats anything sensitive the request carried."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None, ""
    if not isinstance(document, dict):
        return None, ""
    code = document.get("error")
    if not isinstance(code, str) or not _ERROR_CODE.match(code) or any(s in code for s in sensitive):
        return None, ""
    description = document.get("error_description")
    if not isinstance(description, str):
        return code, ""
    shown = "".join(c for c in description if c.isprintable())[:MAX_DESCRIPTION]
    if any(s in description for s in sensitive):
        return code, ""
    return code, f" ({shown})" if shown else ""


# ---- discovery ------------------------------------------------------------------------------------------------------


def _bearer_challenge(values: list[str]) -> dict[str, str]:
    """The parameters of the Bearer challenge among ``WWW-Authenticate`` header values (RFC 9110 §11.6.1)."""
    for value in values:
        scheme: str | None = None
        params: dict[str, str] = {}
        position = 0
        while position < len(value):
            param = _AUTH_PARAM.match(value, position)
            if param is not None:
                raw = param.group(2)
                unquoted = re.sub(r"\\(.)", r"\1", raw[1:-1]) if raw.startswith('"') else raw
                params.setdefault(param.group(1).lower(), unquoted)
                position = param.end()
                continue
            found = _AUTH_SCHEME.match(value, position)
            if found is None:
                break
            if scheme is not None and scheme.lower() == "bearer":
                return params
            scheme, params, position = found.group(1), {}, found.end()
        if scheme is not None and scheme.lower() == "bearer":
            return params
    return {}


async def _challenge(tenant_id: int, resource_url: str) -> tuple[str | None, str | None]:
    """The resource metadata URL and scope the resource's 401 names, when it answers an unauthenticated request so."""
    answer = await _request(
        tenant_id,
        "POST",
        resource_url,
        what="asking the resource how to authorize",
        read_body=False,
        content=PROBE_BODY,
        headers=PROBE_HEADERS,
    )
    if answer.status != 401:
        return None, None
    params = _bearer_challenge(answer.headers.get_list("www-authenticate"))
    metadata_url = params.get("resource_metadata")
    if metadata_url is not None:
        _http_url(metadata_url, f"the resource_metadata {_where(resource_url)} names")
    return metadata_url, _scope(params.get("scope"), f"the scope {_where(resource_url)} asks for")


def _metadata_candidates(resource_url: str, header_url: str | None) -> list[tuple[str, str]]:
    """Where the resource metadata may be, in order, each with the resource it must name (RFC 9728 §3.1, §3.3)."""
    parts = urlsplit(resource_url)
    origin = _origin(resource_url)
    candidates = [(header_url, resource_url)] if header_url else []
    suffix = parts.path if parts.path not in ("", "/") else ""
    suffix += f"?{parts.query}" if parts.query else ""
    if suffix:
        candidates.append((f"{origin}/.well-known/oauth-protected-resource{suffix}", resource_url))
    candidates.append((f"{origin}/.well-known/oauth-protected-resource", origin))
    return candidates


async def discover_for_resource(*, tenant_id: int, resource_url: str) -> tuple[AuthServer, str | None]:
    """The authorization server of a protected resource (an upstream MCP server), found as an MCP client finds it
    (MCP 2025-11-25, authorization): the 401 challenge's ``resource_metadata``, else the well-known URIs (path-aware,
    then root); the metadata's ``resource`` must name the resource; its first authorization server is discovered.
    Also returns the scope to ask for: the challenge's, else the metadata's ``scopes_supported``, else None.

    Raises ``OAuthClientError`` (unreachable, no metadata, metadata for another resource, junk).
    """
    _http_url(resource_url, "the resource URL")
    header_url, challenged_scope = await _challenge(tenant_id, resource_url)
    tried: list[str] = []
    for metadata_url, expected in _metadata_candidates(resource_url, header_url):
        where = _where(metadata_url)
        answer = await _request(tenant_id, "GET", metadata_url, what="reading the resource metadata")
        if answer.status != 200:
            tried.append(f"{where}: HTTP {answer.status}")
            continue
        what = f"the resource metadata at {where}"
        document = _json_object(answer.body, what)
        named = document.get("resource")
        if not isinstance(named, str) or _canonical(named) != _canonical(expected):
            raise OAuthClientError(f"{what} describes another resource than {_where(expected)} (RFC 9728 §3.3)")
        servers = document.get("authorization_servers")
        if not isinstance(servers, list) or not servers:
            raise OAuthClientError(f"{what} names no authorization server")
        issuer = _issuer(servers[0], f"{what}: authorization_servers[0]")
        try:
            offered = _strings(document, "scopes_supported")
        except OAuthClientError as exc:
            raise OAuthClientError(f"{what}: {exc}") from None
        scope = challenged_scope or _scope(" ".join(offered) or None, f"{what}: scopes_supported")
        return await discover_issuer(tenant_id=tenant_id, issuer=issuer), scope
    raise OAuthClientError(f"{_where(resource_url)} publishes no resource metadata ({'; '.join(tried)})")


def _server_metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order MCP lists (RFC 8414 §3.1 and §5, OpenID Connect Discovery)."""
    origin = _origin(issuer)
    path = urlsplit(issuer).path.rstrip("/")
    if not path:
        return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def _same_issuer(named: str, asked: str) -> bool:
    # Identical (RFC 8414 §3.3), except that a root issuer may be written with or without its terminating slash.
    return named == asked or (
        named.rstrip("/") == asked.rstrip("/")
        and urlsplit(named).path in ("", "/")
        and urlsplit(asked).path in ("", "/")
    )


def _server_from(document: dict[str, Any], issuer: str, what: str) -> AuthServer:
    try:
        return AuthServer(
            issuer=issuer,
            authorization_endpoint=document.get("authorization_endpoint"),  # type: ignore[arg-type]  # checked
            token_endpoint=document.get("token_endpoint"),  # type: ignore[arg-type]
            registration_endpoint=document.get("registration_endpoint"),
            revocation_endpoint=document.get("revocation_endpoint"),
            scopes_supported=_strings(document, "scopes_supported"),
            code_challenge_methods=_strings(document, "code_challenge_methods_supported"),
            client_id_metadata_document_supported=_flag(document, "client_id_metadata_document_supported"),
        )
    except OAuthClientError as exc:
        raise OAuthClientError(f"{what}: {exc}") from None


async def discover_issuer(*, tenant_id: int, issuer: str) -> AuthServer:
    """The authorization server ``issuer`` names, from its RFC 8414 or OpenID Connect metadata (tried in MCP's order;
    an answer other than 200 means "not here"). The document's ``issuer`` must be the one asked for.

    Raises ``OAuthClientError`` (unreachable, no metadata, another issuer's metadata, junk).
    """
    _issuer(issuer, "the issuer")
    tried: list[str] = []
    for url in _server_metadata_urls(issuer):
        where = _where(url)
        answer = await _request(tenant_id, "GET", url, what=f"discovering the authorization server {issuer}")
        if answer.status != 200:
            tried.append(f"{where}: HTTP {answer.status}")
            continue
        what = f"the authorization server metadata at {where}"
        document = _json_object(answer.body, what)
        named = document.get("issuer")
        if not isinstance(named, str) or not _same_issuer(named, issuer):
            raise OAuthClientError(f"{what} names another issuer than {issuer} (RFC 8414 §3.3)")
        return _server_from(document, issuer, what)
    raise OAuthClientError(f"{issuer} publishes no authorization server metadata ({'; '.join(tried)})")


# ---- registration and the authorization request ---------------------------------------------------------------------


async def register_client(
    *, tenant_id: int, server: AuthServer, redirect_uri: str, client_name: str, scope: str | None = None
) -> RegisteredClient:
    """Register the platform with ``server`` (RFC 7591) as a public client of the code grant with refresh tokens,
    for ``redirect_uri``.

    Raises ``OAuthClientError`` (no registration endpoint, refused with the server's error code, junk answer).
    """
    if server.registration_endpoint is None:
        raise OAuthClientError(f"{server.issuer} does not offer dynamic client registration")
    where = _where(server.registration_endpoint)
    metadata: dict[str, Any] = {
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": list(GRANT_TYPES),
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    if scope:
        metadata["scope"] = scope
    answer = await _request(
        tenant_id, "POST", server.registration_endpoint, what="registering with the authorization server", json=metadata
    )
    if answer.status not in (200, 201):
        code, description = _oauth_error(answer.body, ())
        reason = code or f"HTTP {answer.status}"
        raise OAuthClientError(f"{where} refused the registration: {reason}{description}", code)
    what = f"the registration answer of {where}"
    document = _json_object(answer.body, what)
    client_id = document.get("client_id")
    if not isinstance(client_id, str) or not client_id or len(client_id) > MAX_URL_LENGTH:
        raise OAuthClientError(f"{what} has no client_id")
    secret = document.get("client_secret")
    if secret is not None and (not isinstance(secret, str) or not _VSCHARS.match(secret)):
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


# ---- the token endpoint ---------------------------------------------------------------------------------------------


def _client_auth(form: dict[str, str], client_id: str, client_secret: str | None) -> dict[str, str]:
    """Headers authenticating the client: none for a public client (its id goes in the body), else HTTP Basic
    with id and secret form-encoded first (RFC 6749 §2.3.1)."""
    if client_secret is None:
        form["client_id"] = client_id
        return {}
    pair = f"{quote_plus(client_id)}:{quote_plus(client_secret)}"
    return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}


def _token_set(body: bytes, what: str) -> TokenSet:
    document = _json_object(body, what)
    access_token = document.get("access_token")
    if not isinstance(access_token, str) or not _VSCHARS.match(access_token):
        raise OAuthClientError(f"{what} has no access_token")
    refresh_token = document.get("refresh_token")
    if refresh_token is not None and (not isinstance(refresh_token, str) or not _VSCHARS.match(refresh_token)):
        raise OAuthClientError(f"{what}: refresh_token is not a string")
    token_type = document.get("token_type", "Bearer")
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        raise OAuthClientError(f"{what}: the token is not a Bearer token")
    expires_in = document.get("expires_in")
    if isinstance(expires_in, str) and expires_in.isdigit() and len(expires_in) < 12:
        expires_in = int(expires_in)  # some servers send the number as a string
    if expires_in is not None and (not isinstance(expires_in, int) or isinstance(expires_in, bool) or expires_in < 0):
        raise OAuthClientError(f"{what}: expires_in is not a number of seconds")
    scope = _scope(document.get("scope"), f"{what}: scope")
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
    where = _where(server.token_endpoint)
    answer = await _request(tenant_id, "POST", server.token_endpoint, what=what, data=form, headers=headers)
    if answer.status == 200:
        return _token_set(answer.body, f"the token answer of {where}")
    if 300 <= answer.status < 400:
        raise OAuthClientError(f"{what}: {where} answered with a redirect (HTTP {answer.status}), not followed")
    code, description = _oauth_error(answer.body, sensitive)
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
            answer = await _request(
                tenant_id, "POST", server.revocation_endpoint, what="revoking a token", data=form, headers=headers
            )
        except OAuthClientError:
            accepted.append(False)
            continue
        accepted.append(answer.status == 200)
    return bool(accepted) and all(accepted)
