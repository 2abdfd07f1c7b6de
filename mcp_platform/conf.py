"""Typed platform settings read from ``settings.MCP_PLATFORM`` with defaults (the DOT/DRF pattern).

Reloaded when a test overrides the setting; validated by a system check at start-up.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register
from django.core.signals import setting_changed

from mcp_core.caching import CACHE_SCOPES

DEFAULTS: dict[str, Any] = {
    # Base URL clients use to reach the platform (``https://mcp.example.com``); empty = derived from the request.
    "PUBLIC_BASE_URL": "",
    # Host names the MCP endpoint answers to (DNS-rebinding guard); Origins on these hosts are same-site.
    "ALLOWED_HOSTS": ["localhost", "127.0.0.1", "[::1]"],
    # Largest request body accepted on the MCP endpoint.
    "MAX_REQUEST_BYTES": 4 * 1024 * 1024,
    # Largest request line plus header fields accepted on any path (larger: 431).
    "MAX_HEADER_BYTES": 32 * 1024,
    # How long a connection may take to send a request's headers (seconds; then 408 and closed), and a request's
    # whole body once its headers arrived (then 408 and closed). Bounds what slow or silent clients hold.
    "HEADER_TIMEOUT": 10.0,
    "BODY_TIMEOUT": 30.0,
    # Handshake-era sessions idle longer than this end (seconds).
    "SESSION_IDLE_TIMEOUT": 3600,
    # Stored SSE events are kept this long for Last-Event-ID replay (seconds).
    "EVENT_RETENTION": 3600,
    # ``retry:`` hint sent before the server closes an SSE stream early (milliseconds).
    "SSE_RETRY_MS": 1000,
    # Keep-alive comment interval on idle SSE streams (seconds).
    "SSE_KEEPALIVE": 15.0,
    # How long a web process trusts its copy of a tenant and its catalog without hearing of a change (seconds).
    # Changes normally arrive at once through the channel layer; this bounds staleness when that nudge is lost.
    # 0 reads the tenant row on every request.
    "TENANT_CACHE_TTL": 5.0,
    # Items per page on list methods.
    "PAGE_SIZE": 50,
    # How long a tool may wait for the client to answer a sampling/elicitation/roots request (seconds).
    "CLIENT_REQUEST_TIMEOUT": 300.0,
    # 2026-07-28 cache hints on server/discover, list results and resources/read: freshness (milliseconds) and
    # who may share a cached copy ("public" or "private"). A tenant may override both.
    "CACHE_TTL_MS": 60_000,
    "CACHE_SCOPE": "private",
    # How long a 2026-07-28 client may take to answer an input_required result before retrying (seconds): the
    # lifetime of the sealed requestState.
    "REQUEST_STATE_TTL": 600,
    # MCP tasks (long tool calls run by the Celery workers): how long a task and its result are kept when the
    # client asks for nothing (2026-07-28 clients never ask) and at most (milliseconds), the polling interval
    # suggested to clients (milliseconds), how many unfinished tasks one principal and one tenant may have, and
    # the lease a worker holds on a running task (seconds; renewed while it runs, taken over when it lapses).
    "TASK_DEFAULT_TTL_MS": 3_600_000,
    "TASK_MAX_TTL_MS": 86_400_000,
    "TASK_POLL_INTERVAL_MS": 1000,
    "TASK_MAX_ACTIVE_PER_PRINCIPAL": 64,
    "TASK_MAX_ACTIVE_PER_TENANT": 1000,
    "TASK_LEASE_SECONDS": 30,
    # Server name and version reported in serverInfo.
    "SERVER_NAME": "mcp-platform",
    "SERVER_VERSION": "0.1.0",
    # Reverse proxies (addresses or CIDR networks) whose X-Forwarded-For is believed when finding a client's
    # address (rate limits). Empty: the peer address is the client's.
    "TRUSTED_PROXIES": [],
    # Anonymous client registrations (RFC 7591) and first fetches of client metadata documents allowed per hour:
    # per client (an IPv4 address or IPv6 /64) and per network (an IPv4 /24 or IPv6 /56). Past the platform-wide
    # figure the platform is under load: each network then gets at most DCR_PER_NETWORK_UNDER_LOAD an hour, so a
    # flood from a few networks cannot lock the others out.
    "DCR_PER_ADDRESS_PER_HOUR": 20,
    "DCR_PER_NETWORK_PER_HOUR": 60,
    "DCR_PLATFORM_PER_HOUR": 1000,
    "DCR_PER_NETWORK_UNDER_LOAD": 3,
    # A self-registered client that never obtained a token (or whose tokens are all gone) is deleted this long
    # after it registered (seconds); clients register again when told their client_id is unknown.
    "DCR_UNUSED_CLIENT_LIFETIME": 24 * 3600,
    # Networks the client-metadata-document fetcher may reach although they are not public (loopback for tests
    # and local development, e.g. ["127.0.0.1/32"]). Empty: only globally routable addresses.
    "CIMD_ALLOWED_NETWORKS": [],
    # A PEM file of extra certificate authorities trusted when fetching client metadata documents (a local test
    # CA); empty: the system trust store only.
    "CIMD_CA_BUNDLE": "",
    # Upstream MCP servers: after this many failed attempts in a row an upstream's circuit opens and calls fail at
    # once for the cool-down (seconds); a proxied call waits this long for the upstream's answer (seconds). (Their
    # catalogs are re-read on list_changed and by beat every MCP_UPSTREAM_REFRESH_SECONDS.)
    "UPSTREAM_CIRCUIT_FAILURES": 3,
    "UPSTREAM_CIRCUIT_COOLDOWN": 30.0,
    "UPSTREAM_CALL_TIMEOUT": 300.0,
}


@dataclass(frozen=True)
class PlatformSettings:
    PUBLIC_BASE_URL: str
    ALLOWED_HOSTS: list[str]
    MAX_REQUEST_BYTES: int
    MAX_HEADER_BYTES: int
    HEADER_TIMEOUT: float
    BODY_TIMEOUT: float
    SESSION_IDLE_TIMEOUT: int
    EVENT_RETENTION: int
    SSE_RETRY_MS: int
    SSE_KEEPALIVE: float
    TENANT_CACHE_TTL: float
    PAGE_SIZE: int
    CLIENT_REQUEST_TIMEOUT: float
    CACHE_TTL_MS: int
    CACHE_SCOPE: str
    REQUEST_STATE_TTL: int
    TASK_DEFAULT_TTL_MS: int
    TASK_MAX_TTL_MS: int
    TASK_POLL_INTERVAL_MS: int
    TASK_MAX_ACTIVE_PER_PRINCIPAL: int
    TASK_MAX_ACTIVE_PER_TENANT: int
    TASK_LEASE_SECONDS: int
    SERVER_NAME: str
    SERVER_VERSION: str
    TRUSTED_PROXIES: list[str]
    DCR_PER_ADDRESS_PER_HOUR: int
    DCR_PER_NETWORK_PER_HOUR: int
    DCR_PLATFORM_PER_HOUR: int
    DCR_PER_NETWORK_UNDER_LOAD: int
    DCR_UNUSED_CLIENT_LIFETIME: int
    CIMD_ALLOWED_NETWORKS: list[str]
    CIMD_CA_BUNDLE: str
    UPSTREAM_CIRCUIT_FAILURES: int
    UPSTREAM_CIRCUIT_COOLDOWN: float
    UPSTREAM_CALL_TIMEOUT: float


def _load() -> PlatformSettings:
    user = getattr(settings, "MCP_PLATFORM", {}) or {}
    unknown = set(user) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"Unknown MCP_PLATFORM settings: {', '.join(sorted(unknown))}")
    merged = {**DEFAULTS, **user}
    return PlatformSettings(**{f.name: merged[f.name] for f in fields(PlatformSettings)})


class _LazySettings:
    """Attribute access to the current ``PlatformSettings``; rebuilt when ``MCP_PLATFORM`` changes."""

    _cached: PlatformSettings | None = None

    def __getattr__(self, name: str) -> Any:
        if self._cached is None:
            self._cached = _load()
        return getattr(self._cached, name)

    def reload(self) -> None:
        self._cached = None


platform_settings = _LazySettings()


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == "MCP_PLATFORM":
        platform_settings.reload()


setting_changed.connect(_reload)


# Settings that must be integers above zero (all checked alike, under one check id).
POSITIVE_INTEGERS = (
    "REQUEST_STATE_TTL",
    "TASK_DEFAULT_TTL_MS",
    "TASK_MAX_TTL_MS",
    "TASK_POLL_INTERVAL_MS",
    "TASK_MAX_ACTIVE_PER_PRINCIPAL",
    "TASK_MAX_ACTIVE_PER_TENANT",
    "TASK_LEASE_SECONDS",
    "DCR_PER_ADDRESS_PER_HOUR",
    "DCR_PER_NETWORK_PER_HOUR",
    "DCR_PLATFORM_PER_HOUR",
    "DCR_PER_NETWORK_UNDER_LOAD",
    "DCR_UNUSED_CLIENT_LIFETIME",
    "UPSTREAM_CIRCUIT_FAILURES",
)


@register()
def check_platform_settings(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Validate MCP_PLATFORM at start-up so a typo fails loudly, not at the first request."""
    try:
        loaded = _load()
    except (ValueError, TypeError) as exc:
        return [Error(str(exc), id="mcp_platform.E001")]
    errors: list[CheckMessage] = []
    if loaded.MAX_REQUEST_BYTES < 1024:
        errors.append(Error("MCP_PLATFORM['MAX_REQUEST_BYTES'] must be at least 1024.", id="mcp_platform.E002"))
    if loaded.MAX_HEADER_BYTES < 4096:
        errors.append(Error("MCP_PLATFORM['MAX_HEADER_BYTES'] must be at least 4096.", id="mcp_platform.E030"))
    for name in ("HEADER_TIMEOUT", "BODY_TIMEOUT"):
        value = getattr(loaded, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 3600:
            errors.append(Error(f"MCP_PLATFORM[{name!r}] must be between 0 and 3600 seconds.", id="mcp_platform.E031"))
    ttl = loaded.TENANT_CACHE_TTL
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 <= ttl <= 300:
        errors.append(
            Error("MCP_PLATFORM['TENANT_CACHE_TTL'] must be between 0 and 300 seconds.", id="mcp_platform.E009")
        )
    if not 1 <= loaded.PAGE_SIZE <= 1000:
        errors.append(Error("MCP_PLATFORM['PAGE_SIZE'] must be between 1 and 1000.", id="mcp_platform.E003"))
    if loaded.PUBLIC_BASE_URL and not loaded.PUBLIC_BASE_URL.startswith(("http://", "https://")):
        errors.append(Error("MCP_PLATFORM['PUBLIC_BASE_URL'] must be an http(s) URL.", id="mcp_platform.E004"))
    if not loaded.ALLOWED_HOSTS:
        errors.append(Error("MCP_PLATFORM['ALLOWED_HOSTS'] must name at least one host.", id="mcp_platform.E005"))
    if not isinstance(loaded.CACHE_TTL_MS, int) or loaded.CACHE_TTL_MS < 0:
        errors.append(Error("MCP_PLATFORM['CACHE_TTL_MS'] must be an integer >= 0.", id="mcp_platform.E006"))
    if loaded.CACHE_SCOPE not in CACHE_SCOPES:
        errors.append(Error("MCP_PLATFORM['CACHE_SCOPE'] must be 'public' or 'private'.", id="mcp_platform.E007"))
    for name in POSITIVE_INTEGERS:
        value = getattr(loaded, name)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            errors.append(Error(f"MCP_PLATFORM[{name!r}] must be an integer > 0.", id="mcp_platform.E008"))
    if loaded.TASK_DEFAULT_TTL_MS > loaded.TASK_MAX_TTL_MS:
        errors.append(
            Error("MCP_PLATFORM['TASK_DEFAULT_TTL_MS'] must not exceed TASK_MAX_TTL_MS.", id="mcp_platform.E010")
        )
    for name in ("TRUSTED_PROXIES", "CIMD_ALLOWED_NETWORKS"):
        for network in getattr(loaded, name):
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError:
                errors.append(
                    Error(f"MCP_PLATFORM['{name}']: {network!r} is not an address or network.", id="mcp_platform.E011")
                )
    if loaded.CIMD_CA_BUNDLE and not Path(loaded.CIMD_CA_BUNDLE).is_file():
        errors.append(Error("MCP_PLATFORM['CIMD_CA_BUNDLE'] must name a PEM file.", id="mcp_platform.E013"))
    return errors
