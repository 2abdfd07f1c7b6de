"""Rate limits a tenant sets on its MCP endpoint, and the ceiling platform staff may set above them.

A limit is a token bucket: ``burst`` requests at once, refilled at ``rate`` requests per ``period`` seconds.
"""

from __future__ import annotations

from django.db import models

from tenants.models import Server, Tenant, name_validator


class Period(models.IntegerChoices):
    SECOND = 1, "per second"
    MINUTE = 60, "per minute"
    HOUR = 3600, "per hour"
    DAY = 86400, "per day"


# Upper bounds that keep a bucket's arithmetic and its Redis key's lifetime sane.
MAX_RATE = 1_000_000
MAX_BURST = 1_000_000
MAX_SUBJECT_LENGTH = 255


class RateLimit(models.Model):
    """One limit of a tenant's MCP endpoint.

    ``tenant``: one bucket for every request to the tenant. ``client``: a bucket per client (the OAuth client id,
    or on a public tenant the client's address); with ``client_id`` set, the limit of that one client instead of
    the default. ``tool``: a bucket per tool for ``tools/call`` (all callers together); with ``tool_name`` set, the
    limit of that one tool instead of the default. ``server``: one bucket for every request to one of the tenant's
    named servers (``server``), on top of the others.
    """

    class Scope(models.TextChoices):
        TENANT = "tenant", "Tenant (all requests)"
        CLIENT = "client", "Client (each client)"
        TOOL = "tool", "Tool (each tool's calls)"
        SERVER = "server", "Server (all requests to one server)"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="rate_limits")
    scope = models.CharField(max_length=16, choices=Scope.choices)
    client_id = models.CharField(
        max_length=MAX_SUBJECT_LENGTH,
        blank=True,
        help_text="Client scope only: one OAuth client id (or, on a public tenant, a client address); "
        "empty applies to every client without a limit of its own.",
    )
    tool_name = models.CharField(
        max_length=128,
        blank=True,
        validators=[name_validator],
        help_text="Tool scope only: one tool's name; empty applies to every tool without a limit of its own.",
    )
    server = models.ForeignKey(
        Server,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="rate_limits",
        help_text="Server scope only: the server whose requests the limit counts.",
    )
    rate = models.PositiveIntegerField(help_text="Requests allowed per period, on average.")
    period = models.PositiveIntegerField(choices=Period.choices, default=Period.MINUTE)
    burst = models.PositiveIntegerField(help_text="Requests allowed at once (the bucket's size); at least 1.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("tenant", "scope", "client_id", "tool_name")
        constraints = [
            models.UniqueConstraint(
                fields=("tenant", "scope", "client_id", "tool_name"),
                condition=~models.Q(scope="server"),
                name="quotas_ratelimit_one_per_subject",
            ),
            models.UniqueConstraint(
                fields=("server",), condition=models.Q(scope="server"), name="quotas_ratelimit_one_per_server"
            ),
        ]

    def __str__(self) -> str:
        subject = self.client_id or self.tool_name or (str(self.server) if self.server_id else "") or "default"
        return f"{self.get_scope_display()}: {subject}, {self.rate} {self.get_period_display()}"


class RateCeiling(models.Model):
    """Platform staff's cap on a tenant: a tenant-wide bucket that always holds, and a bound no limit the tenant's
    admins set may exceed (in rate per second or in burst)."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="rate_ceiling")
    rate = models.PositiveIntegerField(help_text="Requests allowed per period, on average, for the whole tenant.")
    period = models.PositiveIntegerField(choices=Period.choices, default=Period.MINUTE)
    burst = models.PositiveIntegerField(help_text="Requests allowed at once for the whole tenant.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("tenant",)

    def __str__(self) -> str:
        return f"Ceiling of {self.tenant}: {self.rate} {self.get_period_display()}, burst {self.burst}"
