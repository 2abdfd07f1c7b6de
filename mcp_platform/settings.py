"""One env-driven settings module.

With nothing set the platform runs embedded: SQLite, the in-memory channel layer and a Celery worker
inside the serving process. ``DATABASE_URL`` and ``REDIS_URL`` switch to the production path.
"""

import contextlib
import os
import secrets
import tempfile
from pathlib import Path

import dj_database_url

from mcp_infra.postgresql.network import with_network_timeouts

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("MCP_VAR_DIR") or BASE_DIR / "var")  # an empty value means unset
VAR_DIR.mkdir(parents=True, exist_ok=True)

# Metrics of every process on this host add up at /metrics (prometheus_client's multi-process mode). The directory
# must be known before prometheus_client is first imported (it picks its value class then), so it is set here, the
# first project module every process loads; the web processes and workers of one host must share it.
PROMETHEUS_MULTIPROC_DIR = os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(VAR_DIR / "prometheus"))
Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def _embedded_secret_key() -> str:
    """A per-installation key kept under var/, so embedded runs need no configuration."""
    path = VAR_DIR / "secret_key"
    _write_once(path, secrets.token_urlsafe(50))
    return path.read_text().strip()


def _write_once(path: Path, text: str) -> None:
    """Create ``path`` holding ``text``, mode 0600 from the start, exclusively and whole: the text is written to a
    file of this process's own and linked into place, so a concurrent first start keeps whichever key won and no
    process ever reads a key half written."""
    if path.exists():
        return
    fd, own = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        with contextlib.suppress(FileExistsError):
            os.link(own, path)
    finally:
        os.unlink(own)


def _embedded_oidc_key() -> str:
    """An RSA key for signing ID tokens, generated once under var/ (0600) for embedded runs.

    Every process must sign with the same key: set ``MCP_OIDC_RSA_PRIVATE_KEY`` (PEM) on the production path.
    """
    path = VAR_DIR / "oidc_rsa_private_key.pem"
    if not path.exists():
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        pem = (
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
            .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
            .decode()
        )
        _write_once(path, pem)
    return path.read_text()


def _embedded_secrets_key() -> str:
    """A key for tenant secrets (AES-256-GCM, tenants.secrets), generated once under var/ (0600) for embedded runs.

    Every process must decrypt with the same keys: set ``MCP_SECRET_KEYS`` on the production path.
    """
    path = VAR_DIR / "secrets_encryption_key"
    if not path.exists():
        import base64

        _write_once(path, base64.b64encode(secrets.token_bytes(32)).decode())
    return path.read_text().strip()


SECRET_KEY = os.environ.get("SECRET_KEY") or _embedded_secret_key()
DEBUG = _env_bool("DEBUG", False)
ALLOWED_HOSTS = _env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = _env_list("CSRF_TRUSTED_ORIGINS", [])
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (and strips it from clients): opt in.
if _env_bool("MCP_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Not "daphne": its app config installs a Twisted reactor in every process at start-up, and ``manage.py serve``
# starts whichever server is chosen (see mcp_infra/serving/servers.py).
INSTALLED_APPS = [
    "tenants.apps.PlatformAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "channels",
    "oauth2_provider",
    # The catalog's history (tenants.history): versions in reversion's tables, grouped per change into revisions.
    "reversion",
    "tenants",
    "tenants.history",
    "mcp_platform.gateway",
    "mcp_platform.jobs",
    "mcp_platform.oauth",
    "mcp_platform.quotas",
    "mcp_platform.activity",
    "mcp_platform.telemetry",
    # Adds its pages to the tool admin at ready() (tenants.admin.pages).
    "mcp_platform.console",
    # Configuration as code; adds its pages to the tenant admin at ready().
    "mcp_platform.catalog_files",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (the pages' stylesheet, the admin's assets) in every topology, DEBUG or not.
    # WhiteNoise, streaming asynchronously under ASGI (mcp_platform/static_files.py).
    "mcp_platform.static_files.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "mcp_platform.urls"
ASGI_APPLICATION = "mcp_platform.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database: SQLite under var/ unless DATABASE_URL says otherwise.
DATABASE_URL = os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
# Persistent connections with health checks: the gateway's consumers recycle them per request.
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        # WAL lets the serving process read while the in-process worker writes.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
else:
    # Django's PostgreSQL backend plus a check, before each use, that the server has not ended the connection.
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"]["ENGINE"] = "mcp_infra.postgresql"
    # A database that stops answering fails a connection within seconds and a statement within half a minute.
    DATABASES["default"]["OPTIONS"] = with_network_timeouts(DATABASES["default"].get("OPTIONS", {}))
    # The test database follows the configured one, so runs against different databases never share it.
    _test_name = os.environ.get("TEST_DATABASE_NAME") or f"test_{DATABASES['default']['NAME']}"
    DATABASES["default"]["TEST"] = {"NAME": _test_name}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The OpenAPI import page posts a box per operation ticked to import (up to 2,000 operations,
# tenants.openapi.translate.MAX_OPERATIONS) and an upstream's page four fields per item (up to 2,000,
# tenants.admin.upstreams.MAX_ITEMS_ON_PAGE): Django's default of 1,000 fields is too few for either.
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000

# Channel layer and Celery: Redis when REDIS_URL is set, in-process otherwise.
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # redis-py 8 reads with a 5 s socket timeout, the same as channels-redis's 5 s BZPOPMIN: the
                # blocking receive then times out and parks its message in the backup queue for a whole cycle.
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": 15,
                        "socket_connect_timeout": 5,
                        "health_check_interval": 30,
                    }
                ],
                "capacity": 1000,
                "expiry": 60,
            },
        }
    }
    CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
    CELERY_EMBEDDED_WORKER = False
    # Shared by every web process: rate limits must hold across processes.
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "memory://localhost/")
    CELERY_EMBEDDED_WORKER = True
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Connecting to a broker that is down fails within seconds (a task is then queued by the sweep once it is back), and
# so does sending on a connection the broker stopped answering (cut off by the network: without a read timeout the
# publish, and the web process's database thread it runs on, would wait until TCP gives up, a quarter of an hour).
# A message a worker took and never acknowledged comes back after the visibility timeout: by then the sweep has
# started its run anew (within a lease), so the copy finds the start stale and does nothing.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600, "socket_connect_timeout": 3, "socket_timeout": 3}
# Beat's schedule file (a shelve: ``celerybeat-schedule`` plus a suffix the dbm module picks) goes under the var
# directory for every way beat starts (``celery beat``, ``celery worker --beat``, serve's embedded beat), not into
# the working directory: that is the checkout here, and a read-only root file system in a container.
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "purge-expired-activity": {
        "task": "mcp_platform.activity.tasks.activity_purge_expired",
        "schedule": 3600.0,
    },
    "resume-stalled-tool-runs": {
        "task": "mcp_platform.jobs.tasks.tool_runs_resume_stalled",
        "schedule": 5.0,
    },
    "purge-expired-legacy-sessions": {
        "task": "mcp_platform.gateway.tasks.legacy_sessions_purge_expired",
        "schedule": 60.0,
    },
    "purge-expired-tool-runs": {
        "task": "mcp_platform.jobs.tasks.tool_runs_purge_expired",
        "schedule": 60.0,
    },
    "refresh-upstream-catalogs": {
        "task": "tenants.federation.tasks.upstreams_refresh",
        "schedule": float(os.environ.get("MCP_UPSTREAM_REFRESH_SECONDS", "300")),
    },
    "purge-expired-oauth-rows": {
        "task": "mcp_platform.oauth.tasks.oauth_purge_expired",
        "schedule": 3600.0,
    },
}


LOGIN_URL = "/account/login/"
LOGIN_REDIRECT_URL = "/account/apps/"

# OAuth 2.1 authorization server (django-oauth-toolkit) for the tenants' MCP endpoints.
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth.TenantApplication"
# DOT's own (not swapped); named so that the platform's models can point at it (token exchange's actor record).
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth2_provider.AccessToken"
MCP_SCOPES = {
    "mcp:tools": "See and run this workspace's tools",
    "mcp:resources": "Read this workspace's resources",
    "mcp:prompts": "Use this workspace's prompts",
}
OAUTH2_PROVIDER = {
    "SCOPES": {**MCP_SCOPES, "openid": "Know who you are on this platform (your user id)"},
    # A request that names no scope gets the MCP scopes; "openid" is for clients that ask for it.
    "DEFAULT_SCOPES": list(MCP_SCOPES),
    "SCOPES_BACKEND_CLASS": "mcp_platform.oauth.validators.PlatformScopes",
    "OAUTH2_VALIDATOR_CLASS": "mcp_platform.oauth.validators.PlatformOAuth2Validator",
    # oauthlib's OpenID Connect server plus the token-exchange grant, and a request reader for its parameters.
    "OAUTH2_SERVER_CLASS": "mcp_platform.oauth.server.PlatformServer",
    "OAUTH2_BACKEND_CLASS": "mcp_platform.oauth.server.PlatformOAuthLibCore",
    # Authorization code + PKCE (S256 only) and refresh tokens for people's clients; client credentials for
    # machine clients an admin registers; token exchange (RFC 8693) for the clients an admin allows it. Nothing
    # else is offered.
    "PKCE_REQUIRED": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": [
        "authorization_code",
        "refresh_token",
        "client_credentials",
        "urn:ietf:params:oauth:grant-type:token-exchange",
    ],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    # Short-lived access tokens; refresh tokens rotate and a replayed one revokes its family.
    "ACCESS_TOKEN_EXPIRE_SECONDS": int(os.environ.get("MCP_ACCESS_TOKEN_SECONDS", "3600")),
    "REFRESH_TOKEN_EXPIRE_SECONDS": 30 * 24 * 3600,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # Exact redirect URIs; loopback (127.0.0.1, [::1], localhost) with any port for native clients.
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    # RFC 7591: MCP clients register themselves, anonymously; mcp_platform.oauth.registration limits it.
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "DCR_REGISTRATION_TOKEN_EXPIRE_SECONDS": 24 * 3600,
    # Client ID Metadata Documents: an https client_id is fetched (mcp_platform.oauth.cimd sets the policy).
    "CIMD_ENABLED": True,
    "CIMD_METADATA_FETCHER": "mcp_platform.oauth.cimd.PlatformMetadataFetcher",
    "CIMD_REGISTRATION_PERMISSION_CLASSES": ("mcp_platform.oauth.cimd.RateLimitedCIMDPermission",),
    "CIMD_FETCH_TIMEOUT_SECONDS": 3,
    "CIMD_MAX_DOCUMENT_SIZE": 8 * 1024,
    "CIMD_METADATA_MIN_AGE_SECONDS": 300,
    "CIMD_METADATA_MAX_AGE_SECONDS": 24 * 3600,
    "CIMD_FAILURE_BACKOFF_SECONDS": 60,
    # OpenID Connect discovery and ID tokens (RS256) for clients that ask for "openid".
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": os.environ.get("MCP_OIDC_RSA_PRIVATE_KEY") or _embedded_oidc_key(),
    "OIDC_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OIDC_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    # The issuer is where the metadata is served: the public base URL when set, else the request's origin.
    "OIDC_ISS_ENDPOINT": os.environ.get("MCP_PUBLIC_BASE_URL", "").rstrip("/"),
    "APPLICATION_ADMIN_CLASS": "mcp_platform.oauth.admin.OAuthClientAdmin",
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# E-mail (invitations): Django's settings, read from the environment. Without EMAIL_HOST (embedded defaults) mail is
# printed to the console, link and all; EMAIL_BACKEND names another backend (the file-based one writes each message
# to a file in EMAIL_FILE_PATH).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_SSL = _env_bool("EMAIL_USE_SSL", False)
EMAIL_USE_TLS = _env_bool("EMAIL_USE_TLS", bool(EMAIL_HOST) and not EMAIL_USE_SSL)  # STARTTLS
EMAIL_PORT = int(os.environ.get("EMAIL_PORT") or (465 if EMAIL_USE_SSL else 587 if EMAIL_USE_TLS else 25))
EMAIL_TIMEOUT = float(os.environ.get("EMAIL_TIMEOUT", "10"))
EMAIL_FILE_PATH = os.environ.get("EMAIL_FILE_PATH") or str(VAR_DIR / "mail")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "MCP platform <noreply@localhost>")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"  # where collectstatic copies to, for a CDN or a front proxy
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
# WhiteNoise serves straight from the finders (the source tree and the apps), so no process needs a
# collectstatic step first; files are indexed once at start-up (on every request under DEBUG).
WHITENOISE_USE_FINDERS = True
X_FRAME_OPTIONS = "DENY"

# LOG_FORMAT=json: one JSON object per line, and one line per MCP request (mcp_platform.requests, at INFO).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain").strip().lower()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "mcp_platform.telemetry.logs.JsonFormatter"},
    },
    "filters": {"outbound_urls": {"()": "mcp_platform.telemetry.logs.OutboundUrlFilter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "json" if LOG_FORMAT == "json" else "plain"}
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    "loggers": {
        "mcp_platform": {"level": os.environ.get("LOG_LEVEL", "INFO"), "propagate": True},
        "tenants": {"level": os.environ.get("LOG_LEVEL", "INFO"), "propagate": True},
        "mcp_infra": {"level": os.environ.get("LOG_LEVEL", "INFO"), "propagate": True},
        # No secret in any log line at any level: the outbound clients' request lines lose their query and user
        # information, and httpcore's DEBUG traces (response headers an API may have echoed a key into) stay off.
        "httpx": {"filters": ["outbound_urls"]},
        "httpx2": {"filters": ["outbound_urls"]},
        "httpcore": {"level": "WARNING"},
        "httpcore2": {"level": "WARNING"},
    },
}

# Platform settings: read through mcp_infra.conf.platform_settings (defaults live there).
MCP_PLATFORM = {
    "PUBLIC_BASE_URL": os.environ.get("MCP_PUBLIC_BASE_URL", ""),
    "ALLOWED_HOSTS": _env_list("MCP_ALLOWED_HOSTS", ALLOWED_HOSTS),
    "MAX_REQUEST_BYTES": int(os.environ.get("MCP_MAX_REQUEST_BYTES", str(4 * 1024 * 1024))),
    "MAX_HEADER_BYTES": int(os.environ.get("MCP_MAX_HEADER_BYTES", str(32 * 1024))),
    "HEADER_TIMEOUT": float(os.environ.get("MCP_HEADER_TIMEOUT", "10")),
    "BODY_TIMEOUT": float(os.environ.get("MCP_BODY_TIMEOUT", "30")),
    "TRUSTED_PROXIES": _env_list("MCP_TRUSTED_PROXIES", []),
    "METRICS_TOKEN": os.environ.get("MCP_METRICS_TOKEN", ""),
    "METRICS_MAX_TOOLS_PER_TENANT": int(os.environ.get("MCP_METRICS_MAX_TOOLS_PER_TENANT", "100")),
    "METRICS_FOLD_SECONDS": float(os.environ.get("MCP_METRICS_FOLD_SECONDS", "1")),
    "CIMD_ALLOWED_NETWORKS": _env_list("MCP_CIMD_ALLOWED_NETWORKS", []),
    "CIMD_CA_BUNDLE": os.environ.get("MCP_CIMD_CA_BUNDLE", ""),
    "OUTBOUND_ALLOWED_NETWORKS": _env_list("MCP_OUTBOUND_ALLOWED_NETWORKS", []),
    # The first key encrypts, every key decrypts (rotation: put the new key first, run secrets_reencrypt).
    "SECRET_KEYS": _env_list("MCP_SECRET_KEYS", []) or [_embedded_secrets_key()],
    "TENANT_CACHE_TTL": float(os.environ.get("MCP_TENANT_CACHE_SECONDS", "5")),
    "SESSION_CACHE_TTL": float(os.environ.get("MCP_SESSION_CACHE_SECONDS", "5")),
    "UPSTREAM_CIRCUIT_FAILURES": int(os.environ.get("MCP_UPSTREAM_CIRCUIT_FAILURES", "3")),
    # Self-registered clients an hour from one address and one network (a NAT, a proxy: many people behind one).
    "DCR_PER_ADDRESS_PER_HOUR": int(os.environ.get("MCP_DCR_PER_ADDRESS_PER_HOUR", "20")),
    "DCR_PER_NETWORK_PER_HOUR": int(os.environ.get("MCP_DCR_PER_NETWORK_PER_HOUR", "60")),
    "UPSTREAM_CIRCUIT_COOLDOWN": float(os.environ.get("MCP_UPSTREAM_CIRCUIT_COOLDOWN", "30")),
    "UPSTREAM_LEAN_CALLS": _env_bool("MCP_UPSTREAM_LEAN_CALLS", True),
    "UPSTREAM_REFRESH_MIN_INTERVAL": float(os.environ.get("MCP_UPSTREAM_REFRESH_MIN_INTERVAL", "1")),
    "UPSTREAM_LIST_CHANGED_LIMIT": int(os.environ.get("MCP_UPSTREAM_LIST_CHANGED_LIMIT", "60")),
    "UPSTREAM_LIST_CHANGED_WINDOW": float(os.environ.get("MCP_UPSTREAM_LIST_CHANGED_WINDOW", "10")),
    "UPSTREAM_LIST_CHANGED_COOLDOWN": float(os.environ.get("MCP_UPSTREAM_LIST_CHANGED_COOLDOWN", "300")),
    "UPSTREAM_WATCH": _env_bool("MCP_UPSTREAM_WATCH", True),
    "UPSTREAM_WATCH_CHECK": float(os.environ.get("MCP_UPSTREAM_WATCH_CHECK", "2")),
    "CATALOG_REVISION_CHECK": float(os.environ.get("MCP_CATALOG_REVISION_CHECK", "1")),
    "SSE_KEEPALIVE": float(os.environ.get("MCP_SSE_KEEPALIVE", "15")),
    "DRAIN_SECONDS": float(os.environ.get("MCP_DRAIN_SECONDS", "20")),
    "TASK_MAX_RUNNING_PER_TENANT": int(os.environ.get("MCP_TASK_MAX_RUNNING_PER_TENANT", "0")),
    "STREAM_MAX_NOTIFICATIONS": int(os.environ.get("MCP_STREAM_MAX_NOTIFICATIONS", "1000")),
    "SESSION_MAX_STREAM_EVENTS": int(os.environ.get("MCP_SESSION_MAX_STREAM_EVENTS", "10000")),
    "STREAM_RESUME_GRACE": float(os.environ.get("MCP_STREAM_RESUME_GRACE", "30")),
    "ACTIVITY_LOG": os.environ.get("MCP_ACTIVITY_LOG", "1") not in ("0", "false", "off"),
    "ACTIVITY_FLUSH_SECONDS": float(os.environ.get("MCP_ACTIVITY_FLUSH_SECONDS", "1")),
    "ACTIVITY_BATCH": int(os.environ.get("MCP_ACTIVITY_BATCH", "5000")),
}
