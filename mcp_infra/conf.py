"""Typed platform settings read from ``settings.MCP_PLATFORM`` with defaults (the DOT/DRF pattern).

Reloaded when a test overrides the setting; validated by a system check at start-up.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register
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
    # How long a process stopped with SIGTERM may take to finish what it is doing (seconds): a web process its
    # requests in flight (``mcp_infra.serving.drain``), a Celery worker its tool runs, which it then hands over.
    "DRAIN_SECONDS": 20.0,
    # How long a web process trusts its copy of a tenant and its catalog without hearing of a change (seconds).
    # Changes normally arrive at once through the channel layer; this bounds staleness when that nudge is lost.
    # 0 reads the tenant row on every request.
    "TENANT_CACHE_TTL": 5.0,
    # The same bound for a web process's copy of a handshake-era session (its end, log level, handshake).
    "SESSION_CACHE_TTL": 5.0,
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
    # How many of one tenant's tasks run at once, over all workers (0: half the claiming worker's concurrency, at
    # least 1); a start past it stays queued (still working) and is tried again, so no tenant holds every worker.
    "TASK_MAX_RUNNING_PER_TENANT": 0,
    # Handshake-era POST streams: the notifications one request stream stores (and sends), and the events one
    # session stores over all its streams; past them progress is coalesced (the latest kept) and logs dropped (one
    # "N dropped" message), never a result or a server-to-client request. A request whose client left and did not
    # resume its stream within STREAM_RESUME_GRACE seconds is cancelled.
    "STREAM_MAX_NOTIFICATIONS": 1000,
    "SESSION_MAX_STREAM_EVENTS": 10_000,
    "STREAM_RESUME_GRACE": 30.0,
    # Server name and version reported in serverInfo.
    "SERVER_NAME": "mcp-platform",
    "SERVER_VERSION": "0.1.0",
    # Reverse proxies (addresses or CIDR networks) whose X-Forwarded-For is believed when finding a client's
    # address (rate limits). Empty: the peer address is the client's.
    "TRUSTED_PROXIES": [],
    # /metrics: the bearer token a scraper must present (empty: only loopback clients are answered), and how many
    # distinct tool names one tenant may give the tool label in one process (past it: "_other").
    "METRICS_TOKEN": "",
    "METRICS_MAX_TOOLS_PER_TENANT": 100,
    # How often a process adds the requests it counted in memory to the metrics files (seconds): other processes'
    # scrapes see them this late at most (its own /metrics, and its exit, add them at once).
    "METRICS_FOLD_SECONDS": 1.0,
    # Anonymous client registrations (RFC 7591) and first fetches of client metadata documents allowed per hour:
    # per client (an IPv4 address or IPv6 /64) and per network (an IPv4 /24 or IPv6 /56). Past the platform-wide
    # figure the platform is under load: each network then gets at most DCR_PER_NETWORK_UNDER_LOAD an hour, so a
    # flood from a few networks cannot lock the others out.
    "DCR_PER_ADDRESS_PER_HOUR": 20,
    "DCR_PER_NETWORK_PER_HOUR": 60,
    "DCR_PLATFORM_PER_HOUR": 1000,
    "DCR_PER_NETWORK_UNDER_LOAD": 3,
    # Token exchanges (RFC 8693) one client may make per hour: a gateway exchanges once per person and upstream
    # while the token lasts; past this, a runaway or stolen client is told to wait (429) until the hour ends.
    "TOKEN_EXCHANGES_PER_CLIENT_PER_HOUR": 10000,
    # Token introspections (RFC 7662) one client may make per hour: an upstream asks about each token it is shown
    # (a few a second, caching the answers for a while); past this it is told to wait (429) until the hour ends.
    "TOKEN_INTROSPECTIONS_PER_CLIENT_PER_HOUR": 100000,
    # A self-registered client that never obtained a token (or whose tokens are all gone) is deleted this long
    # after it registered (seconds); clients register again when told their client_id is unknown.
    "DCR_UNUSED_CLIENT_LIFETIME": 24 * 3600,
    # Networks the client-metadata-document fetcher may reach although they are not public, on top of
    # OUTBOUND_ALLOWED_NETWORKS (kept so existing deployments keep working; new ones set the outbound setting).
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
    # Proxied calls, reads and prompt renders on an established Streamable HTTP session take the lean path
    # (tenants.federation.lean) instead of the SDK client; off: every request goes through the SDK.
    "UPSTREAM_LEAN_CALLS": True,
    # An upstream's list_changed notifications: its catalog is re-read at most once per this interval (seconds;
    # one refresh running and one pending, however many arrive). More than LIST_CHANGED_LIMIT notifications within
    # LIST_CHANGED_WINDOW seconds disconnect it, and its changes are not listened to again for the cool-down.
    "UPSTREAM_REFRESH_MIN_INTERVAL": 1.0,
    "UPSTREAM_LIST_CHANGED_LIMIT": 60,
    "UPSTREAM_LIST_CHANGED_WINDOW": 10.0,
    "UPSTREAM_LIST_CHANGED_COOLDOWN": 300.0,
    # One process of the deployment watches every enabled upstream from start-up (a lease in Redis, or a file lock
    # on embedded defaults); this is how often it (and every process holding upstream connections) reads which
    # upstreams exist, and the lease lives three times as long.
    "UPSTREAM_WATCH": True,
    "UPSTREAM_WATCH_CHECK": 2.0,
    # Embedded defaults (in-memory channel layer): how often the serving process reads the revisions of the tenants
    # it serves, to announce catalog changes another process (a command) made. 0: never.
    "CATALOG_REVISION_CHECK": 1.0,
    # The outbound door (mcp_infra.outbound): non-public networks every request the platform makes on a
    # tenant's behalf may reach (on-premises APIs, local development, tests: e.g. ["127.0.0.1/32"]). Empty: only
    # globally routable addresses. Platform staff can widen it for one tenant (Tenant.outbound_allowed_networks).
    "OUTBOUND_ALLOWED_NETWORKS": [],
    # Outbound time limits (seconds): to connect, and between two reads of a response.
    "OUTBOUND_CONNECT_TIMEOUT": 5.0,
    "OUTBOUND_READ_TIMEOUT": 30.0,
    # Largest response body the outbound door reads (bytes; event streams are exempt: they are read per event).
    "OUTBOUND_MAX_RESPONSE_BYTES": 16 * 1024 * 1024,
    # HTTP tools: the body kept in a tool result (bytes); a longer body is cut with a note.
    "HTTP_TOOL_MAX_RESULT_BYTES": 256 * 1024,
    # Keys that encrypt tenant secrets (base64 of 32 random bytes each): the first encrypts, all decrypt, so
    # a new key goes first and the old one stays until ``manage.py secrets_reencrypt`` has run.
    "SECRET_KEYS": [],
    # Activity log (mcp_platform.activity): on or off for this process; records kept in memory before they are
    # written (past it new ones are dropped with a counted warning); written every ACTIVITY_FLUSH_SECONDS or as
    # soon as ACTIVITY_BATCH records wait.
    "ACTIVITY_LOG": True,
    "ACTIVITY_BUFFER": 20_000,
    "ACTIVITY_BATCH": 5_000,
    "ACTIVITY_FLUSH_SECONDS": 1.0,
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
    DRAIN_SECONDS: float
    TENANT_CACHE_TTL: float
    SESSION_CACHE_TTL: float
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
    TASK_MAX_RUNNING_PER_TENANT: int
    STREAM_MAX_NOTIFICATIONS: int
    SESSION_MAX_STREAM_EVENTS: int
    STREAM_RESUME_GRACE: float
    SERVER_NAME: str
    SERVER_VERSION: str
    TRUSTED_PROXIES: list[str]
    METRICS_TOKEN: str
    METRICS_MAX_TOOLS_PER_TENANT: int
    METRICS_FOLD_SECONDS: float
    DCR_PER_ADDRESS_PER_HOUR: int
    DCR_PER_NETWORK_PER_HOUR: int
    DCR_PLATFORM_PER_HOUR: int
    DCR_PER_NETWORK_UNDER_LOAD: int
    DCR_UNUSED_CLIENT_LIFETIME: int
    TOKEN_EXCHANGES_PER_CLIENT_PER_HOUR: int
    TOKEN_INTROSPECTIONS_PER_CLIENT_PER_HOUR: int
    CIMD_ALLOWED_NETWORKS: list[str]
    CIMD_CA_BUNDLE: str
    UPSTREAM_CIRCUIT_FAILURES: int
    UPSTREAM_CIRCUIT_COOLDOWN: float
    UPSTREAM_CALL_TIMEOUT: float
    UPSTREAM_LEAN_CALLS: bool
    UPSTREAM_REFRESH_MIN_INTERVAL: float
    UPSTREAM_LIST_CHANGED_LIMIT: int
    UPSTREAM_LIST_CHANGED_WINDOW: float
    UPSTREAM_LIST_CHANGED_COOLDOWN: float
    UPSTREAM_WATCH: bool
    UPSTREAM_WATCH_CHECK: float
    CATALOG_REVISION_CHECK: float
    OUTBOUND_ALLOWED_NETWORKS: list[str]
    OUTBOUND_CONNECT_TIMEOUT: float
    OUTBOUND_READ_TIMEOUT: float
    OUTBOUND_MAX_RESPONSE_BYTES: int
    HTTP_TOOL_MAX_RESULT_BYTES: int
    SECRET_KEYS: list[str]
    ACTIVITY_LOG: bool
    ACTIVITY_BUFFER: int
    ACTIVITY_BATCH: int
    ACTIVITY_FLUSH_SECONDS: float


def _load() -> PlatformSettings:
    user = getattr(settings, "MCP_PLATFORM", {}) or {}
    unknown = set(user) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"Unknown MCP_PLATFORM settings: {', '.join(sorted(unknown))}")
    merged = {**DEFAULTS, **user}
    return PlatformSettings(**{f.name: merged[f.name] for f in fields(PlatformSettings)})


class _LazySettings:
    """Attribute access to the current ``PlatformSettings``; rebuilt when ``MCP_PLATFORM`` changes.

    The values are copied onto the instance once loaded, so a read on the request path is a plain attribute
    lookup; ``__getattr__`` runs only for the first read after a (re)load.
    """

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        loaded = _load()
        self.__dict__.update({f.name: getattr(loaded, f.name) for f in fields(PlatformSettings)})
        return getattr(loaded, name)

    def reload(self) -> None:
        self.__dict__.clear()


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
    "STREAM_MAX_NOTIFICATIONS",
    "SESSION_MAX_STREAM_EVENTS",
    "DCR_PER_ADDRESS_PER_HOUR",
    "DCR_PER_NETWORK_PER_HOUR",
    "DCR_PLATFORM_PER_HOUR",
    "DCR_PER_NETWORK_UNDER_LOAD",
    "DCR_UNUSED_CLIENT_LIFETIME",
    "TOKEN_EXCHANGES_PER_CLIENT_PER_HOUR",
    "TOKEN_INTROSPECTIONS_PER_CLIENT_PER_HOUR",
    "UPSTREAM_CIRCUIT_FAILURES",
    "UPSTREAM_LIST_CHANGED_LIMIT",
    "OUTBOUND_MAX_RESPONSE_BYTES",
    "HTTP_TOOL_MAX_RESULT_BYTES",
    "METRICS_MAX_TOOLS_PER_TENANT",
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
    for name in (
        "HEADER_TIMEOUT",
        "BODY_TIMEOUT",
        "OUTBOUND_CONNECT_TIMEOUT",
        "OUTBOUND_READ_TIMEOUT",
        "DRAIN_SECONDS",
    ):
        value = getattr(loaded, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 3600:
            errors.append(Error(f"MCP_PLATFORM[{name!r}] must be between 0 and 3600 seconds.", id="mcp_platform.E031"))
    fold = loaded.METRICS_FOLD_SECONDS
    if isinstance(fold, bool) or not isinstance(fold, (int, float)) or not 0 < fold <= 60:
        errors.append(
            Error(
                "MCP_PLATFORM['METRICS_FOLD_SECONDS'] must be above 0 and at most 60 seconds.", id="mcp_platform.E014"
            )
        )
    for name in ("UPSTREAM_LIST_CHANGED_WINDOW", "UPSTREAM_WATCH_CHECK"):
        value = getattr(loaded, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 3600:
            errors.append(Error(f"MCP_PLATFORM[{name!r}] must be between 0 and 3600 seconds.", id="mcp_platform.E031"))
    for name in ("UPSTREAM_REFRESH_MIN_INTERVAL", "UPSTREAM_LIST_CHANGED_COOLDOWN", "CATALOG_REVISION_CHECK"):
        value = getattr(loaded, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 86400:
            errors.append(Error(f"MCP_PLATFORM[{name!r}] must be between 0 and 86400 seconds.", id="mcp_platform.E047"))
    for name in ("TENANT_CACHE_TTL", "SESSION_CACHE_TTL"):
        ttl = getattr(loaded, name)
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 <= ttl <= 300:
            errors.append(Error(f"MCP_PLATFORM[{name!r}] must be between 0 and 300 seconds.", id="mcp_platform.E009"))
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
    running = loaded.TASK_MAX_RUNNING_PER_TENANT
    if isinstance(running, bool) or not isinstance(running, int) or running < 0:
        errors.append(
            Error("MCP_PLATFORM['TASK_MAX_RUNNING_PER_TENANT'] must be an integer >= 0.", id="mcp_platform.E008")
        )
    grace = loaded.STREAM_RESUME_GRACE
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not 0 < grace <= 3600:
        errors.append(
            Error("MCP_PLATFORM['STREAM_RESUME_GRACE'] must be between 0 and 3600 seconds.", id="mcp_platform.E031")
        )
    if loaded.TASK_DEFAULT_TTL_MS > loaded.TASK_MAX_TTL_MS:
        errors.append(
            Error("MCP_PLATFORM['TASK_DEFAULT_TTL_MS'] must not exceed TASK_MAX_TTL_MS.", id="mcp_platform.E010")
        )
    for name in ("TRUSTED_PROXIES", "CIMD_ALLOWED_NETWORKS", "OUTBOUND_ALLOWED_NETWORKS"):
        for network in getattr(loaded, name):
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError:
                errors.append(
                    Error(f"MCP_PLATFORM['{name}']: {network!r} is not an address or network.", id="mcp_platform.E011")
                )
    if loaded.CIMD_CA_BUNDLE and not Path(loaded.CIMD_CA_BUNDLE).is_file():
        errors.append(Error("MCP_PLATFORM['CIMD_CA_BUNDLE'] must name a PEM file.", id="mcp_platform.E013"))
    errors.extend(_secret_key_errors(loaded.SECRET_KEYS))
    return errors


@register()
def check_secret_keys_are_shared(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """On the production path (several processes) a key generated under one process's var/ differs from the next
    process's: secrets stored by one could not be read by the others."""
    generated = Path(settings.VAR_DIR) / "secrets_encryption_key"
    keys = getattr(settings, "MCP_PLATFORM", {}).get("SECRET_KEYS") or []
    if settings.REDIS_URL and generated.exists() and generated.read_text().strip() in keys:
        return [
            Warning(
                "Tenant secrets are encrypted with a key generated for this process only.",
                hint="Set MCP_SECRET_KEYS to the same keys on every process.",
                id="mcp_platform.W040",
            )
        ]
    return []


def decode_secret_key(value: str) -> bytes:
    """The 32 bytes of one ``SECRET_KEYS`` entry. Raises ``ValueError`` (naming the entry's position, never its
    value) for anything else."""
    try:
        key = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError, AttributeError):
        raise ValueError("is not base64") from None
    if len(key) != 32:
        raise ValueError(f"decodes to {len(key)} bytes, not 32")
    return key


def _secret_key_errors(values: Any) -> list[CheckMessage]:
    if not isinstance(values, list) or not values:
        return [
            Error(
                "MCP_PLATFORM['SECRET_KEYS'] must name at least one key (MCP_SECRET_KEYS, comma-separated).",
                id="mcp_platform.E040",
            )
        ]
    errors: list[CheckMessage] = []
    decoded: list[bytes] = []
    for position, value in enumerate(values, start=1):
        try:
            decoded.append(decode_secret_key(value))
        except ValueError as exc:
            errors.append(
                Error(
                    f"MCP_PLATFORM['SECRET_KEYS'] key {position} {exc}.",
                    hint="Make one with: openssl rand -base64 32",
                    id="mcp_platform.E041",
                )
            )
    if len(set(decoded)) != len(decoded):
        errors.append(Error("MCP_PLATFORM['SECRET_KEYS'] names the same key twice.", id="mcp_platform.E042"))
    return errors
