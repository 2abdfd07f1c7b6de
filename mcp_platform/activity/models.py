"""One row per observed MCP call (``kind=call``), admin change (``kind=admin``), token exchange (``kind=exchange``,
RFC 8693: issued or refused) or event of a person's own connection (``kind=connection``: connected, refreshed,
used, revoked, a key stored or removed) of a tenant."""

from __future__ import annotations

from django.db import models

from tenants.models import Tenant


class ActivityRecord(models.Model):
    class Kind(models.TextChoices):
        CALL = "call", "MCP call"
        ADMIN = "admin", "Admin change"
        EXCHANGE = "exchange", "Token exchange"
        CONNECTION = "connection", "Personal connection"

    class Outcome(models.TextChoices):
        OK = "ok", "Result"
        TOOL_ERROR = "tool_error", "Tool error (isError)"
        ERROR = "error", "JSON-RPC error"
        RATE_LIMITED = "rate_limited", "Refused by a limit"
        CANCELLED = "cancelled", "Cancelled"
        REFUSED = "refused", "Refused (OAuth error)"

    # No index of its own: the (tenant, at) index below serves every lookup by tenant, and each index is paid for
    # on every stored call.
    # No foreign-key constraint in the database: checking it cost every stored call 2.3 µs of PostgreSQL's CPU, 43%
    # of its work per row. Calls are stored only for tenants that exist (``activity_calls_write``), a tenant's rows
    # go with it (the ORM's cascade), and the purge removes the few that a deletion racing a writer could leave.
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="activity", db_index=False, db_constraint=False
    )
    # Indexed by a migration: BRIN on PostgreSQL (rows arrive in time order; a B-tree cost every stored call 1.5 µs
    # of the database's CPU, a BRIN almost nothing), a B-tree on SQLite.
    at = models.DateTimeField()
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.CALL)
    # Who: the user id (a person, through a client or in the admin; for a token exchange the person it acts for; for a
    # connection the person whose it is) and the OAuth client id (for a token exchange the client that exchanged).
    principal = models.CharField(max_length=64, blank=True)
    client_id = models.CharField(max_length=255, blank=True)
    client_name = models.CharField(max_length=255, blank=True)
    client_version = models.CharField(max_length=64, blank=True)
    # What: the JSON-RPC method and its target (tool name, resource URI, prompt name); for an admin change the
    # action (create, change, delete) and the kind of object ("tool", "secret", ...); for a token exchange
    # "oauth/token-exchange" and the upstream named; for a connection "connection/<what happened>" and its target
    # ("upstream:3").
    method = models.CharField(max_length=64)
    target = models.CharField(max_length=512, blank=True)
    protocol_version = models.CharField(max_length=16, blank=True)
    transport = models.CharField(max_length=16, blank=True)
    # The slug of the tenant's named server a call went to ("" for its default server).
    server = models.CharField(max_length=63, blank=True, default="")
    request_id = models.CharField(max_length=128, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.OK)
    error_code = models.IntegerField(null=True, blank=True)
    # Arguments (where the tenant opted in, secrets redacted); for admin changes {"before": ..., "after": ...}; for a
    # token exchange {"scope": ..., "error": the OAuth error code when refused}; for a connection {"by": the admin's
    # user id} when an admin disconnected a member, {"error": ...} when a refresh failed (never a token or key).
    details = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        # One B-tree serves a tenant's log, its filters (a tool, a client: within the tenant's rows, newest first),
        # its usage and its purge. Each index is paid for on every stored call.
        indexes = [models.Index(fields=["tenant", "-at"], name="activity_tenant_at")]

    def __str__(self) -> str:
        if self.kind == self.Kind.ADMIN and self.method.startswith("admin/"):
            action = self.method.removeprefix("admin/")
            return f"{action.capitalize()}: {self.target}".strip()
        return f"{self.method} {self.target}".strip()
