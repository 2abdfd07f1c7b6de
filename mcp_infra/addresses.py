"""Where the platform is reached: its public origin as a client sees it, and the URL of each tenant endpoint, of the
tenant's default server (``/t/<tenant>/<endpoint>``) or of one of its named servers
(``/t/<tenant>/s/<server>/<endpoint>``).

Every part of the house that names an endpoint (the gateway's audience checks, the authorization server's metadata,
the admin's tenant page) computes or parses it here, so that all of them agree on the URLs that tokens are bound to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from django.conf import settings
from django.http import HttpRequest

from mcp_infra.conf import platform_settings

# A tenant's endpoints, each a protected resource of its own (RFC 9728): Streamable HTTP, and the 2024-11-05
# transport's stream and the message endpoint it hands out.
MCP = "mcp"
SSE = "sse"
MESSAGES = "messages"
ENDPOINTS = (MCP, SSE, MESSAGES)
# The path segment before a named server's slug: /t/<tenant>/s/<server>/<endpoint>.
SERVERS = "s"
# A tenant's default server, as the server part of an address.
DEFAULT_SERVER = ""


class EndpointAddress(NamedTuple):
    """What an endpoint's URL or path names: a tenant, one of its servers ("" for the default one) and the
    endpoint (``MCP``, ``SSE``, ``MESSAGES``)."""

    tenant: str
    server: str
    endpoint: str


def _address(parts: list[str]) -> EndpointAddress | None:
    """``["t", tenant, endpoint]`` or ``["t", tenant, "s", server, endpoint]`` as an address, else None."""
    if len(parts) == 3 and parts[0] == "t" and parts[1] and parts[2] in ENDPOINTS:
        return EndpointAddress(parts[1], DEFAULT_SERVER, parts[2])
    if len(parts) == 5 and parts[0] == "t" and parts[1] and parts[2] == SERVERS and parts[3] and parts[4] in ENDPOINTS:
        return EndpointAddress(parts[1], parts[3], parts[4])
    return None


def path_tenant_and_server(path: str) -> tuple[str | None, str]:
    """The tenant slug of a request path under ``/t/<tenant>/`` (None for any other path) and the server slug when it
    is under ``/t/<tenant>/s/<server>/`` ("" otherwise); existence unchecked."""
    parts = path.split("/")
    if len(parts) < 3 or parts[1] != "t" or not parts[2]:
        return None, DEFAULT_SERVER
    if len(parts) > 4 and parts[3] == SERVERS:
        return parts[2], parts[4]
    return parts[2], DEFAULT_SERVER


def scope_header(scope: dict[str, Any], name: bytes) -> str | None:
    """The first value of the ASGI request header ``name`` (lower-case bytes), or None."""
    return next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == name), None)


def base_url_from_scope(scope: dict[str, Any]) -> str:
    """The platform's public origin as the client sees it (the Host header was checked before).

    Like Django's ``request.scheme``, it honours ``SECURE_PROXY_SSL_HEADER`` (``MCP_PROXY_SSL_HEADER``), so the
    gateway and the authorization server agree on the endpoint URLs that tokens are bound to.
    """
    if platform_settings.PUBLIC_BASE_URL:
        return str(platform_settings.PUBLIC_BASE_URL).rstrip("/")
    host = scope_header(scope, b"host") or "localhost"
    scheme = scope.get("scheme", "http")
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        meta_name, secure_value = proxy_header
        forwarded = scope_header(scope, meta_name.removeprefix("HTTP_").lower().replace("_", "-").encode())
        if forwarded is not None and forwarded.split(",", 1)[0].strip() == secure_value:
            scheme = "https"
    return f"{scheme}://{host}"


def base_url_from_request(request: HttpRequest) -> str:
    if platform_settings.PUBLIC_BASE_URL:
        return str(platform_settings.PUBLIC_BASE_URL).rstrip("/")
    return f"{request.scheme}://{request.get_host()}"


def base_url_from_headers(headers: Mapping[str, Any]) -> str:
    """The public origin from an oauthlib request's headers (DOT copies Django's ``META`` into them)."""
    if platform_settings.PUBLIC_BASE_URL:
        return str(platform_settings.PUBLIC_BASE_URL).rstrip("/")
    django_request = HttpRequest()
    django_request.META = dict(headers)
    scheme = "https" if headers.get("X_DJANGO_OAUTH_TOOLKIT_SECURE") else "http"
    return f"{scheme}://{django_request.get_host()}"


def endpoint_url(base_url: str, slug: str, endpoint: str = MCP, server: str = DEFAULT_SERVER) -> str:
    """The resource identifier of one of a tenant's endpoints (``MCP``, ``SSE``, ``MESSAGES``), of its default server
    or of its server ``server``: its URL."""
    if server:
        return f"{base_url}/t/{slug}/{SERVERS}/{server}/{endpoint}"
    return f"{base_url}/t/{slug}/{endpoint}"


def address_of(resource: str) -> EndpointAddress | None:
    """What an endpoint URL of any origin names (``…/t/<slug>/<endpoint>``, ``…/t/<slug>/s/<server>/<endpoint>``),
    else None (existence unchecked)."""
    return _address(resource.split("://", 1)[-1].partition("/")[2].split("/"))


def tenant_slug_of(resource: str) -> str | None:
    """The tenant slug in an endpoint URL of any origin (of the tenant's default server or of a named one), else None
    (existence unchecked)."""
    address = address_of(resource)
    return address.tenant if address is not None else None


def is_tenant_endpoint(resource: str, base_url: str, slug: str) -> bool:
    """Whether ``resource`` is the URL of an endpoint of tenant ``slug`` at ``base_url``, of any of its servers
    (existence unchecked)."""
    address = address_of(resource)
    return (
        address is not None
        and address.tenant == slug
        and resource == endpoint_url(base_url, slug, address.endpoint, address.server)
    )


def endpoint_of(path: str) -> str:
    """Which endpoint a request path ``/t/<slug>/<endpoint>`` is for; anything else counts as ``MCP``."""
    last = path.rsplit("/", 1)[-1]
    return last if last in ENDPOINTS else MCP


def accepted_audiences(base_url: str, slug: str, endpoint: str, server: str = DEFAULT_SERVER) -> frozenset[str]:
    """The token audiences a request to ``endpoint`` of the tenant's server ``server`` ("" the default one) accepts:
    on the Streamable HTTP endpoint, that endpoint only; on the 2024-11-05 transport (``/sse`` and the ``/messages``
    it hands out), a token for either of those or for the same server's ``/mcp``: they are one MCP server. Never
    another server's, nor another tenant's."""
    if endpoint == MCP:
        return frozenset({endpoint_url(base_url, slug, MCP, server)})
    return frozenset(endpoint_url(base_url, slug, e, server) for e in ENDPOINTS)


def metadata_url(base_url: str, slug: str, endpoint: str = MCP, server: str = DEFAULT_SERVER) -> str:
    """Where the RFC 9728 metadata of the endpoint a request went to lives (the path-component form).

    The 2024-11-05 transport's resource is the ``/sse`` URL the client connected to (the SDKs check the
    metadata's ``resource`` against it, for ``/messages`` refusals too), so both of its endpoints point there.
    """
    named = MCP if endpoint == MCP else SSE
    return f"{base_url}/.well-known/oauth-protected-resource" + endpoint_url("", slug, named, server)
