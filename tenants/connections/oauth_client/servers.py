"""Which authorization server a resource or an issuer names, found as an MCP client finds it (MCP 2025-11-25,
authorization): the resource's 401 challenge and RFC 9728 metadata, then RFC 8414 or OpenID Connect metadata, each
document checked before use. ``AuthServer`` is what is known of a server, storable as JSON."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tenants.connections.oauth_client.wire import (
    OAuthClientError,
    canonical,
    flag,
    http_url,
    issuer_url,
    json_object,
    origin_of,
    request,
    scope_value,
    shown_url,
    strings,
)

# The unauthenticated request that makes an MCP server answer with its challenge (any method would do: the 401
# comes before the body is read); a ping, so that a server asking for nothing does nothing either.
PROBE_BODY = b'{"jsonrpc": "2.0", "id": 0, "method": "ping"}'
PROBE_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_AUTH_PARAM = re.compile(rf'\s*,?\s*({_TOKEN})\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)')
_AUTH_SCHEME = re.compile(rf"\s*,?\s*({_TOKEN})(?=[\s,]|$)")


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
        issuer_url(self.issuer, "issuer")
        for name in ("authorization_endpoint", "token_endpoint"):
            http_url(getattr(self, name), name)
        for name in ("registration_endpoint", "revocation_endpoint"):
            if getattr(self, name) is not None:
                http_url(getattr(self, name), name)
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
            scopes_supported=strings(value, "scopes_supported"),
            code_challenge_methods=strings(value, "code_challenge_methods"),
            client_id_metadata_document_supported=value.get("client_id_metadata_document_supported", False),
        )


# ---- a resource's metadata -------------------------------------------------------------------------------------------


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
    answer = await request(
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
        http_url(metadata_url, f"the resource_metadata {shown_url(resource_url)} names")
    return metadata_url, scope_value(params.get("scope"), f"the scope {shown_url(resource_url)} asks for")


def _metadata_candidates(resource_url: str, header_url: str | None) -> list[tuple[str, str]]:
    """Where the resource metadata may be, in order, each with the resource it must name (RFC 9728 §3.1, §3.3)."""
    parts = urlsplit(resource_url)
    origin = origin_of(resource_url)
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
    http_url(resource_url, "the resource URL")
    header_url, challenged_scope = await _challenge(tenant_id, resource_url)
    tried: list[str] = []
    for metadata_url, expected in _metadata_candidates(resource_url, header_url):
        where = shown_url(metadata_url)
        answer = await request(tenant_id, "GET", metadata_url, what="reading the resource metadata")
        if answer.status != 200:
            tried.append(f"{where}: HTTP {answer.status}")
            continue
        what = f"the resource metadata at {where}"
        document = json_object(answer.body, what)
        named = document.get("resource")
        if not isinstance(named, str) or canonical(named) != canonical(expected):
            raise OAuthClientError(f"{what} describes another resource than {shown_url(expected)} (RFC 9728 §3.3)")
        servers = document.get("authorization_servers")
        if not isinstance(servers, list) or not servers:
            raise OAuthClientError(f"{what} names no authorization server")
        issuer = issuer_url(servers[0], f"{what}: authorization_servers[0]")
        try:
            offered = strings(document, "scopes_supported")
        except OAuthClientError as exc:
            raise OAuthClientError(f"{what}: {exc}") from None
        scope = challenged_scope or scope_value(" ".join(offered) or None, f"{what}: scopes_supported")
        return await discover_issuer(tenant_id=tenant_id, issuer=issuer), scope
    raise OAuthClientError(f"{shown_url(resource_url)} publishes no resource metadata ({'; '.join(tried)})")


# ---- an issuer's metadata --------------------------------------------------------------------------------------------


def _server_metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order MCP lists (RFC 8414 §3.1 and §5, OpenID Connect Discovery)."""
    origin = origin_of(issuer)
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
            scopes_supported=strings(document, "scopes_supported"),
            code_challenge_methods=strings(document, "code_challenge_methods_supported"),
            client_id_metadata_document_supported=flag(document, "client_id_metadata_document_supported"),
        )
    except OAuthClientError as exc:
        raise OAuthClientError(f"{what}: {exc}") from None


async def discover_issuer(*, tenant_id: int, issuer: str) -> AuthServer:
    """The authorization server ``issuer`` names, from its RFC 8414 or OpenID Connect metadata (tried in MCP's order;
    an answer other than 200 means "not here"). The document's ``issuer`` must be the one asked for.

    Raises ``OAuthClientError`` (unreachable, no metadata, another issuer's metadata, junk).
    """
    issuer_url(issuer, "the issuer")
    tried: list[str] = []
    for url in _server_metadata_urls(issuer):
        where = shown_url(url)
        answer = await request(tenant_id, "GET", url, what=f"discovering the authorization server {issuer}")
        if answer.status != 200:
            tried.append(f"{where}: HTTP {answer.status}")
            continue
        what = f"the authorization server metadata at {where}"
        document = json_object(answer.body, what)
        named = document.get("issuer")
        if not isinstance(named, str) or not _same_issuer(named, issuer):
            raise OAuthClientError(f"{what} names another issuer than {issuer} (RFC 8414 §3.3)")
        return _server_from(document, issuer, what)
    raise OAuthClientError(f"{issuer} publishes no authorization server metadata ({'; '.join(tried)})")
