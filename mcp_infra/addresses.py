"""Where the platform is reached: its public origin as a client sees it, and the URL of each tenant endpoint.

Every part of the house that names an endpoint (the gateway's audience checks, the authorization server's metadata,
the admin's tenant page) computes it here, so that all of them agree on the URLs that tokens are bound to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest

from mcp_infra.conf import platform_settings

# A tenant's endpoints, each a protected resource of its own (RFC 9728): Streamable HTTP, and the 2024-11-05
# transport's stream and the message endpoint it hands out.
MCP = "mcp"
SSE = "sse"
MESSAGES = "messages"
ENDPOINTS = (MCP, SSE, MESSAGES)


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


def endpoint_url(base_url: str, slug: str, endpoint: str = MCP) -> str:
    """The resource identifier of one of a tenant's endpoints (``MCP``, ``SSE``, ``MESSAGES``): its URL."""
    return f"{base_url}/t/{slug}/{endpoint}"


def tenant_slug_of(resource: str) -> str | None:
    """The tenant slug in an endpoint URL ``…/t/<slug>/<endpoint>`` of any origin, else None (existence
    unchecked)."""
    path = resource.split("://", 1)[-1].partition("/")[2]
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == "t" and parts[2] in ENDPOINTS and parts[1]:
        return parts[1]
    return None


def endpoint_of(path: str) -> str:
    """Which endpoint a request path ``/t/<slug>/<endpoint>`` is for; anything else counts as ``MCP``."""
    last = path.rsplit("/", 1)[-1]
    return last if last in ENDPOINTS else MCP


def accepted_audiences(base_url: str, slug: str, endpoint: str) -> frozenset[str]:
    """The token audiences a request to ``endpoint`` accepts: on the Streamable HTTP endpoint, that endpoint
    only; on the 2024-11-05 transport (``/sse`` and the ``/messages`` it hands out), a token for either of
    those or for the tenant's ``/mcp``: they are one MCP server. Never another tenant's."""
    if endpoint == MCP:
        return frozenset({endpoint_url(base_url, slug)})
    return frozenset(endpoint_url(base_url, slug, e) for e in ENDPOINTS)


def metadata_url(base_url: str, slug: str, endpoint: str = MCP) -> str:
    """Where the RFC 9728 metadata of the endpoint a request went to lives (the path-component form).

    The 2024-11-05 transport's resource is the ``/sse`` URL the client connected to (the SDKs check the
    metadata's ``resource`` against it, for ``/messages`` refusals too), so both of its endpoints point there.
    """
    named = MCP if endpoint == MCP else SSE
    return f"{base_url}/.well-known/oauth-protected-resource/t/{slug}/{named}"
