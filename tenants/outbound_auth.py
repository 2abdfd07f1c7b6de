"""How the platform authenticates to what a tenant's tools call (HTTP tools, OpenAPI operations and upstream MCP
servers alike), from tenant secrets: bearer, API key in a header or the query, basic, and OAuth 2.0
client credentials with a per-process token cache. Values are fetched at the moment of use and never kept beyond
the request, except client-credentials access tokens, which are cached in memory until they expire. The shape of
an auth config (``auth_errors``) is checked here too: upstream MCP servers authenticate the same way.
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from mcp_core.errors import ToolError
from mcp_infra.outbound import OutboundRefused, outbound_client, read_capped
from tenants.models import SECRET_NAME_PATTERN
from tenants.secrets import SecretNotFound, SecretUnreadable, asecret_value

AUTH_TYPES = ("bearer", "header", "query", "basic", "client_credentials")
# Configs that act as the person calling: each person's own OAuth connection or API key, or a token exchanged for
# theirs (``tenants.connections.credentials``); ``machine`` is the shared config machine clients use (absent: they
# are refused).
PERSONAL_AUTH_TYPES = ("user_oauth", "user_key", "token_exchange")
OAUTH_CLIENT_MODES = ("metadata_document", "dynamic", "manual")
KEY_PLACEMENTS = ("bearer", "header", "query")
# The keys each kind of auth config takes.
AUTH_KEYS = {
    "bearer": {"secret", "type"},
    "basic": {"secret", "type"},
    "header": {"secret", "type", "name"},
    "query": {"secret", "type", "name"},
    "client_credentials": {"secret", "type", "client_id", "token_url", "scope"},
}
PERSONAL_AUTH_KEYS = {
    "user_oauth": {
        "type",
        "issuer",
        "authorization_endpoint",
        "token_endpoint",
        "revocation_endpoint",
        "client",
        "client_id",
        "secret",
        "scope",
        "resource",
        "machine",
    },
    "user_key": {"type", "placement", "name", "label", "machine"},
    "token_exchange": {"type", "client_id", "secret", "audience", "scope", "machine"},
}
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
# A token is renewed this long before the expiry its server announced (clock skew, time in flight).
TOKEN_EXPIRY_MARGIN = 30.0
DEFAULT_TOKEN_LIFETIME = 300.0
TOKEN_RESPONSE_LIMIT = 64 * 1024


@dataclass
class Credentials:
    """What an auth config adds to one request, and the values that must never reach a result."""

    headers: dict[str, str] = field(default_factory=dict)
    params: list[tuple[str, str]] = field(default_factory=list)
    # Header names that carry a credential: dropped when a redirect leaves the API's origin.
    secret_headers: set[str] = field(default_factory=set)
    sensitive: list[str] = field(default_factory=list)
    # Set when the bearer token came from the cache: a 401 then means it was revoked early.
    cached_token_key: tuple[Any, ...] | None = None


@dataclass(frozen=True, slots=True)
class _Token:
    value: str
    expires_at: float


# Per process: (tenant, token URL, client id, scope, fingerprint of the client secret) -> access token.
_tokens: dict[tuple[Any, ...], _Token] = {}


def forget_token(key: tuple[Any, ...]) -> None:
    """Drop a cached token the API refused (revoked early): the next call fetches a new one."""
    _tokens.pop(key, None)


async def _secret(tenant_id: int, name: str, tool_name: str) -> str:
    try:
        return await asecret_value(tenant_id=tenant_id, name=name)
    except SecretNotFound:
        raise ToolError(f"HTTP tool {tool_name!r} needs the secret {name!r}, which this tenant does not have") from None
    except SecretUnreadable as exc:
        raise ToolError(f"HTTP tool {tool_name!r} cannot read its secret: {exc}") from None


def _http_url(value: Any) -> bool:
    try:
        return isinstance(value, str) and urlsplit(value).scheme.lower() in ("http", "https")
    except ValueError:  # brackets that hold no IPv6 address
        return False


def _personal_auth_errors(auth: dict[str, Any], *, issuer_required: bool) -> list[str]:
    kind = auth["type"]
    problems = [f'"auth" ({kind}) has unknown key {key!r}.' for key in sorted(set(auth) - PERSONAL_AUTH_KEYS[kind])]
    for key in ("issuer", "authorization_endpoint", "token_endpoint", "revocation_endpoint", "resource", "audience"):
        if key in auth and auth[key] not in (None, "") and not _http_url(auth[key]):
            problems.append(f'"auth" ({kind}): "{key}" must be an http(s) URL.')
    for key in ("scope", "label", "client_id"):
        if key in auth and not isinstance(auth[key], str):
            problems.append(f'"auth" ({kind}): "{key}" must be a string.')
    secret = auth.get("secret")
    if secret not in (None, "") and (not isinstance(secret, str) or not re.match(SECRET_NAME_PATTERN, secret)):
        problems.append(f'"auth" ({kind}): "secret" must be the name of one of the tenant\'s secrets.')
    if kind == "user_oauth":
        client = auth.get("client", "metadata_document")
        if client not in OAUTH_CLIENT_MODES:
            problems.append(f'"auth" (user_oauth): "client" must be one of {", ".join(OAUTH_CLIENT_MODES)}.')
        if client == "manual" and not auth.get("client_id"):
            problems.append('"auth" (user_oauth): a client entered by hand needs "client_id".')
        endpoints = [bool(auth.get("authorization_endpoint")), bool(auth.get("token_endpoint"))]
        if any(endpoints) and not all(endpoints):
            problems.append('"auth" (user_oauth): give both "authorization_endpoint" and "token_endpoint", or neither.')
        if issuer_required and not auth.get("issuer") and not all(endpoints):
            problems.append(
                '"auth" (user_oauth): an HTTP API needs "issuer" (or both endpoints) of its authorization server.'
            )
    elif kind == "user_key":
        placement = auth.get("placement", "bearer")
        if placement not in KEY_PLACEMENTS:
            problems.append(f'"auth" (user_key): "placement" must be one of {", ".join(KEY_PLACEMENTS)}.')
        name = auth.get("name")
        if placement in ("header", "query") and (
            not isinstance(name, str) or not name or (placement == "header" and not HEADER_NAME.match(name))
        ):
            problems.append(f'"auth" (user_key): a key sent in the {placement} needs "name".')
    elif kind == "token_exchange":
        if not auth.get("client_id") or not auth.get("secret"):
            problems.append('"auth" (token_exchange) needs "client_id" and "secret": the tenant\'s exchanging client.')
        if not auth.get("audience"):
            problems.append('"auth" (token_exchange) needs "audience": the upstream\'s resource URL.')
    machine = auth.get("machine")
    if machine is not None:
        if not isinstance(machine, dict) or machine.get("type") in PERSONAL_AUTH_KEYS:
            problems.append(f'"auth" ({kind}): "machine" must be null or a shared auth config (bearer, header, ...).')
        else:
            problems += [f"machine clients: {p}" for p in auth_errors(machine)]
    return problems


def auth_errors(auth: Any, *, issuer_required: bool = True) -> list[str]:
    """Why ``auth`` is not a secret reference or a personal config (HTTP tools' and upstreams' auth shape), or
    nothing. ``issuer_required``: False for upstream MCP servers, whose authorization server is discovered."""
    if auth is None:
        return []
    if isinstance(auth, dict) and auth.get("type") in PERSONAL_AUTH_KEYS:
        return _personal_auth_errors(auth, issuer_required=issuer_required)
    if not isinstance(auth, dict) or auth.get("type") not in AUTH_KEYS:
        kinds = ", ".join([*AUTH_KEYS, *PERSONAL_AUTH_KEYS])
        return [f'"auth" must be null or an object whose "type" is one of {kinds}.']
    kind = auth["type"]
    problems = [f'"auth" ({kind}) has unknown key {key!r}.' for key in sorted(set(auth) - AUTH_KEYS[kind])]
    secret = auth.get("secret")
    if not isinstance(secret, str) or not re.match(SECRET_NAME_PATTERN, secret):
        problems.append('"auth" needs "secret": the name of one of the tenant\'s secrets.')
    if kind in ("header", "query"):
        name = auth.get("name")
        if not isinstance(name, str) or not name or (kind == "header" and not HEADER_NAME.match(name)):
            problems.append(f'"auth" ({kind}) needs "name": the {kind} parameter that carries the key.')
    if kind == "client_credentials":
        if not isinstance(auth.get("client_id"), str) or not auth["client_id"]:
            problems.append('"auth" (client_credentials) needs "client_id".')
        if not _http_url(auth.get("token_url")):
            problems.append('"auth" (client_credentials) needs "token_url": an http(s) URL.')
        if "scope" in auth and not isinstance(auth["scope"], str):
            problems.append('"auth" (client_credentials): "scope" must be a string of space-separated scopes.')
    return problems


def auth_secret_names(auth: Any) -> list[str]:
    """The tenant secrets an auth config names: its own, and its machine clients' config's."""
    if not isinstance(auth, dict):
        return []
    names = [auth["secret"]] if isinstance(auth.get("secret"), str) and auth["secret"] else []
    return names + auth_secret_names(auth.get("machine"))


def header_value_problem(value: str) -> str | None:
    """Why ``value`` cannot be an HTTP header value as sent (ASCII, no control characters), or None."""
    if not value.isascii():
        return "it holds a character outside ASCII"
    if any((ord(c) < 32 and c != "\t") or c == "\x7f" for c in value):
        return "it holds a line break or another control character"
    return None


def _header_secret(value: str, what: str, tool_name: str) -> str:
    # Say which secret and why, never its value (an encoding error would quote the offending character).
    if (problem := header_value_problem(value)) is not None:
        raise ToolError(f"HTTP tool {tool_name!r} cannot send {what} in a header: {problem}")
    return value


def _where(url: str) -> str:
    """A URL as messages show it: no query (an API key may be there), no user info."""
    parts = httpx.URL(url)
    return f"{parts.scheme}://{parts.host}{f':{parts.port}' if parts.port else ''}{parts.path}"


async def _client_credentials_token(
    tenant_id: int, auth: dict[str, Any], client_secret: str, timeout: httpx.Timeout
) -> tuple[str, tuple[Any, ...], bool]:
    """An access token for the auth config (cached until shortly before it expires), its cache key, and whether
    it came from the cache.

    Raises ``ToolError`` naming the token endpoint and its status, never the secret.
    """
    fingerprint = hashlib.sha256(client_secret.encode()).hexdigest()
    key = (tenant_id, auth["token_url"], auth["client_id"], auth.get("scope", ""), fingerprint)
    cached = _tokens.get(key)
    if cached is not None and cached.expires_at > time.monotonic():
        return cached.value, key, True
    form = {"grant_type": "client_credentials"}
    if auth.get("scope"):
        form["scope"] = auth["scope"]
    where = _where(auth["token_url"])
    try:
        async with outbound_client(tenant_id=tenant_id).stream(
            "POST",
            auth["token_url"],
            data=form,
            auth=httpx.BasicAuth(auth["client_id"], client_secret),
            headers={"Accept": "application/json"},
            timeout=timeout,
            follow_redirects=False,
        ) as response:
            body = await read_capped(response, TOKEN_RESPONSE_LIMIT)
    except OutboundRefused as exc:
        raise ToolError(f"could not get an access token from {where}: {exc}") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"could not get an access token from {where}: {type(exc).__name__}") from None
    if not response.is_success:
        raise ToolError(f"could not get an access token from {where}: HTTP {response.status_code}")
    try:
        answer = httpx.Response(200, content=body).json()
        token = str(answer["access_token"])
        lifetime = float(answer.get("expires_in") or DEFAULT_TOKEN_LIFETIME)
    except (ValueError, KeyError, TypeError):
        raise ToolError(f"the token endpoint {where} did not answer with an access_token") from None
    now = time.monotonic()
    # Expired tokens go when a new one comes, so the cache holds at most the live token of each config.
    for stale in [k for k, t in _tokens.items() if t.expires_at <= now]:
        _tokens.pop(stale, None)
    _tokens[key] = _Token(token, now + max(0.0, lifetime - TOKEN_EXPIRY_MARGIN))
    return token, key, False


async def credentials_for(
    *, tenant_id: int, tool_name: str, auth: dict[str, Any] | None, timeout: httpx.Timeout
) -> Credentials:
    """What ``auth`` adds to a request of the tool. Raises ``ToolError`` (missing secret, token endpoint failure)."""
    found = Credentials()
    if not auth:
        return found
    value = await _secret(tenant_id, auth["secret"], tool_name)
    found.sensitive.append(value)
    kind = auth["type"]
    named = f"the secret {auth['secret']!r}"
    if kind == "bearer":
        found.headers["Authorization"] = "Bearer " + _header_secret(value, named, tool_name)
        found.secret_headers.add("Authorization")
    elif kind == "header":
        found.headers[auth["name"]] = _header_secret(value, named, tool_name)
        found.secret_headers.add(auth["name"])
    elif kind == "query":
        found.params.append((auth["name"], value))
    elif kind == "basic":
        encoded = base64.b64encode(value.encode()).decode()
        found.headers["Authorization"] = f"Basic {encoded}"
        found.secret_headers.add("Authorization")
        found.sensitive += [encoded, value.partition(":")[2]]
    elif kind == "client_credentials":
        token, key, from_cache = await _client_credentials_token(tenant_id, auth, value, timeout)
        found.cached_token_key = key if from_cache else None
        found.sensitive.append(token)
        found.headers["Authorization"] = "Bearer " + _header_secret(token, "the access token it was given", tool_name)
        found.secret_headers.add("Authorization")
    return found
