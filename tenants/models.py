"""Tenants, memberships and the catalog each tenant serves (tools, resources, templates, prompts).

Models hold data and database-level guarantees only; validation of the JSON shapes lives in
``tenants.validation`` and every write goes through ``tenants.services``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

# The 2025-11-25 tool-name rule, also applied to prompt names.
NAME_PATTERN = r"^[A-Za-z0-9_.\-]{1,128}$"
name_validator = RegexValidator(
    NAME_PATTERN,
    "Use 1 to 128 characters: letters, digits, underscore, hyphen and dot.",
    code="invalid_name",
)


# OAuth scope tokens (RFC 6749 §3.3, narrowed to what reads well in a consent page), space separated.
SCOPE_LIST_PATTERN = r"^\s*[A-Za-z0-9:._/\-]{1,64}(\s+[A-Za-z0-9:._/\-]{1,64})*\s*$"
scope_list_validator = RegexValidator(
    SCOPE_LIST_PATTERN,
    "Use OAuth scope names (letters, digits and : . _ / -), separated by spaces.",
    code="invalid_scopes",
)


# A tag of a catalog item: what a server's selection may choose items by ("tag:<tag>").
TAG_PATTERN = r"^[A-Za-z0-9_.\-]{1,64}$"
MAX_TAGS = 32
TAGS_HELP = "Labels a server's selection may choose this item by, e.g. read-only, billing (letters, digits, _ . -)."


def default_input_schema() -> dict[str, Any]:
    return {"type": "object"}


class Tenant(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        SUSPENDED = "suspended", "Suspended"

    slug = models.SlugField(max_length=63, unique=True, help_text="Appears in the endpoint URL /t/<slug>/mcp.")
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    allowed_origins = models.JSONField(
        default=list,
        blank=True,
        help_text='Browser origins allowed to call the endpoint, e.g. ["https://app.example"].',
    )
    instructions = models.TextField(blank=True, help_text="Sent to clients as the MCP server instructions.")
    requires_authorization = models.BooleanField(default=False)
    cache_ttl_ms = models.PositiveIntegerField(
        "cache TTL (ms)",
        null=True,
        blank=True,
        help_text="2026-07-28 cache hint: how long clients may reuse lists and resource reads (ms). "
        "Empty: the platform default.",
    )
    cache_scope = models.CharField(
        max_length=8,
        blank=True,
        choices=[("public", "Public (shared caches allowed)"), ("private", "Private (per authorization)")],
        help_text="2026-07-28 cache hint: who may share a cached copy. Empty: the platform default.",
    )
    # Widening of the outbound door for this tenant's requests (mcp_infra.outbound); set by platform staff only.
    outbound_allowed_networks = models.JSONField(
        default=list,
        blank=True,
        help_text="Non-public networks this tenant's HTTP tools and other outbound requests may reach, on top of "
        'the platform\'s, e.g. ["10.20.0.0/16"]. Only superusers can change it.',
    )
    # Activity log (mcp_platform.activity): whether calls' arguments are kept (secrets redacted), and for how long.
    activity_record_arguments = models.BooleanField(
        default=False,
        help_text="Keep the arguments of tool calls and prompt requests in the activity log (fields marked "
        "writeOnly in a tool's input schema and secret-like names are redacted).",
    )
    activity_retention_days = models.PositiveSmallIntegerField(
        default=30,
        validators=[MinValueValidator(1), MaxValueValidator(3650)],
        help_text="Days the activity log of this tenant is kept.",
    )
    # Bumped in the same transaction as any change to the tenant or its catalog: per-process caches compare it
    # (tenants.cache), so a change is seen even when its channel-layer nudge is lost.
    revision = models.PositiveBigIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        ADMIN = "admin", "Admin"
        MEMBER = "member", "Member"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tenant_memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="tenants_membership_unique_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.role})"


class Backend(models.TextChoices):
    """How a tool runs, a templated resource is produced, or a prompt is rendered."""

    STATIC = "static", "Static"
    PYTHON = "python", "Python function"
    UPSTREAM = "upstream", "Upstream MCP server"
    HTTP = "http", "HTTP request"


class TaskSupport(models.TextChoices):
    """Whether a tool's calls may run as MCP tasks (``execution.taskSupport``; ``mcp_core.tasks.TaskSupport``)."""

    FORBIDDEN = "forbidden", "Never (answer in the request)"
    OPTIONAL = "optional", "When the client accepts tasks"
    REQUIRED = "required", "Always (clients without tasks are refused)"


class Withheld(models.TextChoices):
    """Why a tool is kept from clients while a held change of its source waits (``PendingChange``)."""

    NO = "", "Served"
    INCOMPATIBLE = "incompatible", "Withheld: its new input schema is incompatible with the approved one"
    REMOVED = "removed", "Withheld: its source no longer offers it"


class ChangePolicy(models.TextChoices):
    """What an upstream's (or an OpenAPI source's re-import's) changes to tool definitions do."""

    ACCEPT = "accept", "Accept changes as they come"
    HOLD = "hold", "Hold changes for an admin's approval"


class Tool(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=128, validators=[name_validator])
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=default_input_schema)
    output_schema = models.JSONField(null=True, blank=True)
    annotations = models.JSONField(null=True, blank=True)
    icons = models.JSONField(null=True, blank=True)
    backend = models.CharField(max_length=16, choices=Backend.choices, default=Backend.STATIC)
    config = models.JSONField(
        default=dict,
        blank=True,
        help_text='static: {"content": [...], "isError": false, "structuredContent"?: {...}}; '
        'python: {"function": "<registered name>"}; '
        'http: {"method": "GET", "url": "https://api.example/{id}", "query": {}, "headers": {}, "body": null, '
        '"auth": null, "timeout": 30}',
    )
    task_support = models.CharField(
        max_length=16,
        choices=TaskSupport.choices,
        default=TaskSupport.FORBIDDEN,
        help_text="Long tools: run calls as tasks the client polls (run by the Celery workers).",
    )
    enabled = models.BooleanField(default=True)
    required_scopes = models.CharField(
        max_length=500,
        blank=True,
        validators=[scope_list_validator],
        help_text="OAuth scopes, separated by spaces, a token needs besides mcp:tools to see and call this tool "
        "(on tenants that require authorization), e.g. billing:write.",
    )
    tags = models.JSONField(default=list, blank=True, help_text=TAGS_HELP)
    # Set on items mirrored from an upstream MCP server (see the Upstream block at the end of this module).
    upstream = models.ForeignKey(
        "Upstream", null=True, blank=True, on_delete=models.CASCADE, related_name="tools", editable=False
    )
    # Set by its source while a held change waits (``tenants.pinning``): not listed, not called, whatever ``enabled``.
    withheld = models.CharField(max_length=16, choices=Withheld.choices, blank=True, default="", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant_id", "name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="tenants_tool_unique_name")]
        indexes = [models.Index(fields=["tenant", "enabled", "name"], name="tenants_tool_listing")]

    def __str__(self) -> str:
        return self.name


class Resource(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="resources")
    uri = models.CharField("URI", max_length=2048)
    name = models.CharField(max_length=255)
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    mime_type = models.CharField("MIME type", max_length=255, blank=True)
    # NULL, not "", says which of the two a resource has: "" is a valid (empty) text.
    text = models.TextField(null=True, blank=True)  # noqa: DJ001
    blob = models.TextField(null=True, blank=True, help_text="Base64-encoded binary content.")  # noqa: DJ001
    annotations = models.JSONField(null=True, blank=True)
    tags = models.JSONField(default=list, blank=True, help_text=TAGS_HELP)
    # Set on items mirrored from an upstream MCP server (see the Upstream block at the end of this module).
    upstream = models.ForeignKey(
        "Upstream", null=True, blank=True, on_delete=models.CASCADE, related_name="resources", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant_id", "uri"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "uri"], name="tenants_resource_unique_uri"),
            models.CheckConstraint(
                condition=(models.Q(text__isnull=False) & models.Q(blob__isnull=True))
                | (models.Q(text__isnull=True) & models.Q(blob__isnull=False)),
                name="tenants_resource_text_xor_blob",
                violation_error_message="A resource has exactly one of text or blob.",
            ),
        ]

    def __str__(self) -> str:
        return self.uri


class ResourceTemplate(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="resource_templates")
    name = models.CharField(max_length=255)
    uri_template = models.CharField(
        "URI template", max_length=2048, help_text="RFC 6570 template, e.g. docs://{section}/{page}."
    )
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    mime_type = models.CharField("MIME type", max_length=255, blank=True)
    backend = models.CharField(max_length=16, choices=Backend.choices, default=Backend.STATIC)
    config = models.JSONField(
        default=dict,
        blank=True,
        help_text='static: {"text": "... {variable} ..."}; python: {"function": "<registered name>"}',
    )
    completions = models.JSONField(default=dict, blank=True, help_text='{"variable": ["value", ...]}')
    tags = models.JSONField(default=list, blank=True, help_text=TAGS_HELP)
    # Set on items mirrored from an upstream MCP server (see the Upstream block at the end of this module).
    upstream = models.ForeignKey(
        "Upstream", null=True, blank=True, on_delete=models.CASCADE, related_name="resource_templates", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant_id", "name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="tenants_template_unique_name")]

    def __str__(self) -> str:
        return self.name


class Prompt(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="prompts")
    name = models.CharField(max_length=128, validators=[name_validator])
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    arguments = models.JSONField(
        default=list, blank=True, help_text='[{"name": "...", "description": "...", "required": true}]'
    )
    completions = models.JSONField(default=dict, blank=True, help_text='{"argument": ["value", ...]}')
    messages = models.JSONField(
        default=list,
        blank=True,
        help_text='static: [{"role": "user", "content": {"type": "text", "text": "... {{argument}} ..."}}]; '
        "python: empty (the function makes them)",
    )
    backend = models.CharField(max_length=16, choices=Backend.choices, default=Backend.STATIC)
    config = models.JSONField(
        default=dict, blank=True, help_text='static: {}; python: {"function": "<registered name>"}'
    )
    tags = models.JSONField(default=list, blank=True, help_text=TAGS_HELP)
    # Set on items mirrored from an upstream MCP server (see the Upstream block at the end of this module).
    upstream = models.ForeignKey(
        "Upstream", null=True, blank=True, on_delete=models.CASCADE, related_name="prompts", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant_id", "name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="tenants_prompt_unique_name")]

    def __str__(self) -> str:
        return self.name


# ---- servers within a tenant --------------------------------------------------------------------------------
# The tenant's default server (/t/<slug>/mcp) serves its whole catalog; each Server is a curated selection of it at
# /t/<slug>/s/<server>/mcp (tenants.servers owns the selection's rules and the writes).

# A server's slug is a path segment of its URL; these would read as a tenant endpoint's own name.
RESERVED_SERVER_SLUGS = frozenset({"mcp", "sse", "messages"})


class Server(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="servers")
    slug = models.SlugField(max_length=63, help_text="Appears in the server's URL /t/<tenant>/s/<slug>/mcp.")
    title = models.CharField(
        max_length=200, blank=True, help_text="Shown to clients as the server's title. Empty: the tenant's name."
    )
    instructions = models.TextField(blank=True, help_text="Sent to clients as this server's instructions.")
    selection = models.JSONField(
        default=list,
        blank=True,
        help_text='What the server serves: items by key ("tools:search", "resources:docs://readme", '
        '"templates:docs://{page}", "prompts:triage"), by source ("upstream:<id>", "openapi:<id>") or by tag '
        '("tag:read-only").',
    )
    required_scopes = models.CharField(
        max_length=500,
        blank=True,
        validators=[scope_list_validator],
        help_text="OAuth scopes, separated by spaces, every request to this server needs (on tenants that require "
        "authorization), on top of those of the tools it calls.",
    )
    enabled = models.BooleanField(default=True, help_text="A disabled server's URL answers 404.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant_id", "slug"]
        constraints = [models.UniqueConstraint(fields=["tenant", "slug"], name="tenants_server_unique_slug")]

    def __str__(self) -> str:
        return self.slug


# ---- secrets ----------------------------------------------------------------------------------------------

# A secret's name: what HTTP tools, OpenAPI sources and upstreams refer to it by.
SECRET_NAME_PATTERN = r"^[A-Za-z0-9_.\-]{1,64}$"
secret_name_validator = RegexValidator(
    SECRET_NAME_PATTERN, "Use 1 to 64 characters: letters, digits, underscore, hyphen and dot.", code="invalid_name"
)


class Secret(models.Model):
    """A tenant's credential, stored only as AES-GCM ciphertext (tenants.secrets owns every write and read)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="secrets")
    name = models.CharField(max_length=64, validators=[secret_name_validator])
    # base64(nonce || ciphertext || tag), bound to (tenant, name) as associated data.
    ciphertext = models.TextField(editable=False)
    # Which of MCP_SECRET_KEYS encrypted it (a fingerprint of the key, never the key).
    key_id = models.CharField(max_length=16, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant_id", "name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="tenants_secret_unique_name")]

    def __str__(self) -> str:
        return self.name


# ---- OpenAPI import ---------------------------------------------------------------------------------------


class OpenApiSource(models.Model):
    """An imported OpenAPI document: where it came from and how; its tools point back here (``Tool.openapi_source``),
    so importing it again replaces exactly what it made."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="openapi_sources")
    name = models.CharField(max_length=200, help_text="A label for the admin; the document's title by default.")
    location = models.CharField(max_length=2048, help_text="The document's URL, or the file name it was read from.")
    prefix = models.CharField(max_length=64, blank=True, help_text="Put before every tool name, e.g. petstore_.")
    base_url = models.CharField(
        "base URL", max_length=2048, blank=True, help_text="Overrides the document's servers. Empty: from the document."
    )
    secret_name = models.CharField(
        max_length=64, blank=True, help_text="The tenant secret the tools authenticate with."
    )
    client_id = models.CharField(
        "client ID", max_length=255, blank=True, help_text="OAuth 2.0 client credentials: the client id."
    )
    change_policy = models.CharField(
        max_length=8,
        choices=ChangePolicy.choices,
        default=ChangePolicy.ACCEPT,
        help_text="Changes a re-import brings to its tools' definitions. Accept: applied at once. Hold: the approved "
        "definitions keep being served and each change waits for an admin's approval (Review changes); new tools "
        "wait too.",
    )
    withhold_incompatible = models.BooleanField(
        "withhold on incompatible schema",
        default=False,
        help_text="While its change waits, withhold a tool whose new input schema is incompatible with the approved "
        "one (not listed, not called) instead of serving the approved definition.",
    )
    # How many changes the last re-import saw beyond the pending-change limit (not recorded; they show once some are
    # decided and the source is read again).
    held_overflow = models.PositiveIntegerField(default=0, editable=False)
    document_sha256 = models.CharField(max_length=64, editable=False)
    imported_at = models.DateTimeField(editable=False)
    # The operations the last import offered to tick, by key ("GET /pets"): the next import tells an operation new in
    # the document from one left out then. None: imported before they were kept.
    offered_operations = models.JSONField(null=True, blank=True, default=None, editable=False)

    class Meta:
        ordering = ["tenant_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "location"], name="tenants_openapi_source_unique_location")
        ]
        verbose_name = "OpenAPI source"

    def __str__(self) -> str:
        return self.name


Tool.add_to_class(
    "openapi_source",
    models.ForeignKey(
        OpenApiSource,
        null=True,
        blank=True,
        editable=False,
        on_delete=models.CASCADE,
        related_name="tools",
        verbose_name="OpenAPI source",
        help_text="The OpenAPI import this tool came from; importing it again updates or removes the tool.",
    ),
)


# ---- Python functions a tenant may bind -------------------------------------------------------------------


class PythonFunctionGrant(models.Model):
    """Platform staff allow one registered Python function to one tenant (``tenants.backends.python_grants`` owns
    the rule)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="python_function_grants")
    function = models.CharField(max_length=200, help_text="A registered function name, e.g. demo.echo.")
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant_id", "function"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "function"], name="tenants_python_grant_unique_function")
        ]
        verbose_name = "Python function grant"

    def __str__(self) -> str:
        return f"{self.function} for {self.tenant}"


# ---- Upstream MCP servers (federation) ---------------------------------------------------------------------
# An MCP server the platform connects to as a client; its tools, resources, templates and prompts are mirrored
# into the tenant's catalog (rows with ``upstream`` set) and calls to them are proxied (tenants.federation.backend).

UPSTREAM_NAME_PATTERN = r"^[A-Za-z0-9_\-]{1,64}$"
upstream_name_validator = RegexValidator(
    UPSTREAM_NAME_PATTERN, "Use 1 to 64 characters: letters, digits, underscore and hyphen.", code="invalid_name"
)


class Upstream(models.Model):
    class Transport(models.TextChoices):
        STREAMABLE_HTTP = "streamable-http", "Streamable HTTP"
        SSE = "sse", "HTTP+SSE (2024-11-05)"

    class SessionMode(models.TextChoices):
        AUTO = "auto", "Automatic: 2026-07-28, and a session for the tools found to need one"
        STATELESS = "stateless", "Stateless 2026-07-28 only (where offered)"
        SESSION = "session", "Handshake session (2025-11-25) for everything"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="upstreams")
    name = models.CharField(max_length=64, validators=[upstream_name_validator])
    url = models.URLField("URL", max_length=2048, help_text="The upstream's MCP endpoint (Streamable HTTP or /sse).")
    prefix = models.CharField(
        max_length=64,
        blank=True,
        help_text="Prepended to the names of its tools, templates and prompts (the name and _ when added without one).",
    )
    auth = models.JSONField(
        null=True,
        blank=True,
        help_text='null, or a secret reference: {"type": "bearer", "secret": "gh-token"}, '
        '{"type": "header", "name": "X-API-Key", "secret": "api-key"}, or {"type": "client_credentials", '
        '"secret": "client-secret", "client_id": "...", "token_url": "https://...", "scope": "a b"}',
    )
    enabled = models.BooleanField(default=True)
    excluded = models.JSONField(
        default=list,
        blank=True,
        help_text='Upstream items not to serve, by the upstream\'s names: e.g. ["tools:delete_repo", "prompts:triage", '
        '"resources:notes://readme", "resource_templates:topic"]; a refresh removes them and keeps them out.',
    )
    # What the tenant changed of a mirrored item, keyed like ``excluded``: {"tools:search": {"name": "find",
    # "description": "..."}}. The mirror writes these over the upstream's values at every refresh.
    overrides = models.JSONField(default=dict, blank=True, editable=False)
    session_mode = models.CharField(
        max_length=16,
        choices=SessionMode.choices,
        default=SessionMode.AUTO,
        help_text="How the platform speaks to the upstream. A tool that asks the user or the client's model while it "
        "runs (ctx.elicit, sampling, roots as server-to-client requests) needs a handshake session: automatic mode "
        "notices the upstream's refusal on 2026-07-28 and calls that tool in a session from then on.",
    )
    session_tools = models.JSONField(
        default=list,
        blank=True,
        help_text="The upstream's tools (by its names) called in a handshake session in automatic mode: added when "
        "the upstream refuses a tool's question for want of a back-channel; remove a name to try it stateless again.",
    )
    change_policy = models.CharField(
        max_length=8,
        choices=ChangePolicy.choices,
        default=ChangePolicy.ACCEPT,
        help_text="Changes the upstream makes to its tools (name, description, annotations, schemas). Accept: "
        "mirrored at once. Hold: the approved definitions keep being served and each change waits for an admin's "
        "approval (Review changes); new tools wait too.",
    )
    withhold_incompatible = models.BooleanField(
        "withhold on incompatible schema",
        default=False,
        help_text="While its change waits, withhold a tool whose new input schema is incompatible with the approved "
        "one (not listed, not called) instead of serving the approved definition.",
    )
    # How many changes the last refresh saw beyond the pending-change limit (not recorded; they show once some are
    # decided and the source is read again).
    held_overflow = models.PositiveIntegerField(default=0, editable=False)
    # Bumped whenever what the connection depends on (URL, auth, enabled) changes: pooled sessions are keyed by it.
    revision = models.PositiveBigIntegerField(default=0, editable=False)
    # Health, written by the pool on state changes only (never per call); last_error never holds a secret value.
    transport = models.CharField(max_length=16, choices=Transport.choices, blank=True, editable=False)
    protocol_version = models.CharField(max_length=32, blank=True, editable=False)
    last_ok_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_error = models.TextField(blank=True, editable=False)
    last_error_at = models.DateTimeField(null=True, blank=True, editable=False)
    consecutive_failures = models.PositiveIntegerField(default=0, editable=False)
    circuit_open_until = models.DateTimeField(null=True, blank=True, editable=False)
    last_refreshed_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The cache hints the upstream gave each of its lists at the last refresh, by list (``{"tools": {"ttlMs": 0,
    # "cacheScope": "private"}}``; a list it gave none, as in the handshake era, is missing): the tenant's lists
    # never promise a longer life or a wider scope.
    list_cache_hints = models.JSONField(default=dict, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant_id", "name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="tenants_upstream_unique_name")]

    def __str__(self) -> str:
        return self.name


# ---- Held changes (pinned definitions) ---------------------------------------------------------------------


class PendingChange(models.Model):
    """A change a source (an upstream, or an OpenAPI source's re-import) proposed to one of its tools while it holds
    changes: added, changed or removed, with the approved definition (served meanwhile) and the proposed one.

    One row per source and item. The same proposal seen again only moves ``last_seen``; a different one replaces it.
    A rejected proposal stays as a row of status ``rejected`` so that seeing it again raises nothing
    (``tenants.pinning.ledger`` owns these rules)."""

    class Kind(models.TextChoices):
        ADD = "add", "New tool"
        CHANGE = "change", "Changed definition"
        REMOVE = "remove", "Removed"

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for review"
        REJECTED = "rejected", "Rejected"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="pending_changes")
    upstream = models.ForeignKey(
        "Upstream", null=True, blank=True, on_delete=models.CASCADE, related_name="pending_changes"
    )
    openapi_source = models.ForeignKey(
        OpenApiSource, null=True, blank=True, on_delete=models.CASCADE, related_name="pending_changes"
    )
    # The item as its source names it: "tools:<upstream name>" (an upstream's), "tools:<tool name>" (OpenAPI).
    item_key = models.CharField(max_length=300)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    # Definitions as the source gives them (an upstream's wire dict; an OpenAPI tool's fields); None: there is none.
    approved = models.JSONField(null=True, blank=True)
    proposed = models.JSONField(null=True, blank=True)
    # SHA-256 of the proposal (of the removal, for ``remove``): what "the same proposal" means.
    digest = models.CharField(max_length=64)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["tenant_id", "item_key"]
        constraints = [
            models.UniqueConstraint(fields=["upstream", "item_key"], name="tenants_pending_change_upstream_item"),
            models.UniqueConstraint(fields=["openapi_source", "item_key"], name="tenants_pending_change_openapi_item"),
            models.CheckConstraint(
                condition=models.Q(upstream__isnull=False, openapi_source__isnull=True)
                | models.Q(upstream__isnull=True, openapi_source__isnull=False),
                name="tenants_pending_change_one_source",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item_key} ({self.get_kind_display().lower()})"


# ---- Invitations ------------------------------------------------------------------------------------------


class Invitation(models.Model):
    """Someone asked by e-mail to join a tenant with a role (``tenants.people`` owns the rules). The link's token is
    kept only as its SHA-256 digest: the database alone opens no invitation."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField(max_length=254, verbose_name="e-mail")
    role = models.CharField(max_length=16, choices=Membership.Role.choices)
    token_digest = models.CharField(max_length=64, unique=True, editable=False)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(verbose_name="last sent")
    expires_at = models.DateTimeField(verbose_name="expires")
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["tenant", "accepted_at", "revoked_at"], name="tenants_invitation_open")]

    def __str__(self) -> str:
        return f"{self.email} to {self.tenant} ({self.role})"


# ---- people's own credentials (tenants.connections) ---------------------------------------------------------------

# What a person's credential is for: one upstream, one OpenAPI source (all its tools), or one hand-made HTTP tool.
CONNECTION_TARGET_PATTERN = r"^(upstream|openapi|tool):[1-9][0-9]{0,18}$"


class PersonalCredential(models.Model):
    """A person's own credential for one target of a tenant: an OAuth connection (access and refresh tokens) or an
    API key, sealed by ``tenants.secrets`` and bound to (tenant, person, target). Never shown, logged or exported."""

    class Kind(models.TextChoices):
        OAUTH = "oauth", "OAuth connection"
        KEY = "key", "Personal API key"

    class Status(models.TextChoices):
        ACTIVE = "active", "Connected"
        # The upstream refused a refresh: the person is asked to connect again on their next call.
        NEEDS_PERSON = "needs_person", "Needs reconnecting"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="personal_credentials")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="personal_credentials")
    target = models.CharField(max_length=40, validators=[RegexValidator(CONNECTION_TARGET_PATTERN)])
    kind = models.CharField(max_length=8, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    # JSON of {"access_token", "refresh_token"} (oauth) or {"key"} (key), encrypted.
    sealed = models.TextField(editable=False)
    key_id = models.CharField(max_length=16, editable=False)
    scope = models.TextField(blank=True, editable=False)
    # When the access token expires (None: the upstream did not say, or a key).
    expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Which authorization server issued it (oauth), for refresh and revocation.
    issuer = models.CharField(max_length=2048, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    refreshed_at = models.DateTimeField(null=True, blank=True, editable=False)
    # While a process refreshes the tokens: no other process uses the refresh token until then (one refresh across
    # processes; a refresh token is often good for one use only).
    refresh_claimed_until = models.DateTimeField(null=True, blank=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Why the last refresh failed (the upstream's error code and description; never a token).
    last_error = models.CharField(max_length=300, blank=True, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user", "target"], name="tenants_personal_credential_unique"),
        ]
        indexes = [models.Index(fields=["tenant", "target"], name="tenants_personal_cred_target")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of user {self.user_id} for {self.target}"


class ConnectLink(models.Model):
    """One link a call's question carried: single use, short-lived, bound to the person, the tenant and the target.
    Only digests of the link's token and of the OAuth ``state`` are stored; the PKCE verifier is sealed."""

    token_digest = models.CharField(max_length=64, unique=True)
    state_digest = models.CharField(max_length=64, unique=True, null=True, blank=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    target = models.CharField(max_length=40, validators=[RegexValidator(CONNECTION_TARGET_PATTERN)])
    elicitation_id = models.CharField(max_length=64)
    sealed = models.TextField(blank=True, editable=False)
    key_id = models.CharField(max_length=16, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["expires_at"], name="tenants_connect_link_expiry")]

    def __str__(self) -> str:
        return f"connect link of user {self.user_id} for {self.target}"


class OAuthClientRegistration(models.Model):
    """How the platform is known to one authorization server for one of a tenant's targets: the server's metadata
    as discovered, and the client id it uses there (a registered one, or its client ID metadata document's URL)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    target = models.CharField(max_length=40, validators=[RegexValidator(CONNECTION_TARGET_PATTERN)])
    issuer = models.CharField(max_length=2048)
    server = models.JSONField(editable=False)
    client_id = models.CharField(max_length=2048)
    # A dynamically registered client's secret (rare: we register as a public client), sealed.
    sealed_secret = models.TextField(blank=True, editable=False)
    key_id = models.CharField(max_length=16, blank=True, editable=False)
    # The scope the upstream's challenge or metadata asked for (MCP upstreams).
    scope = models.TextField(blank=True)
    # Where the authorization server sends people back (the platform's address when it was registered).
    redirect_uri = models.CharField(max_length=2048, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "target"], name="tenants_oauth_client_registration_unique"),
        ]

    def __str__(self) -> str:
        return f"client {self.client_id} at {self.issuer}"
