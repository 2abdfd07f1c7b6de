"""The console's run history: one row per run an admin started from a tool's console, kept for that admin alone."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from tenants.models import Tenant, Tool


class ConsoleRunRecord(models.Model):
    """What one console run sent and got: its arguments (secrets redacted), its outcome, its result and the JSON-RPC
    messages it exchanged, each bounded in size (``mcp_platform.console.history``)."""

    class Outcome(models.TextChoices):
        OK = "ok", "Finished"
        TOOL_ERROR = "tool_error", "Finished with a tool error"
        ERROR = "error", "Failed"
        RATE_LIMITED = "rate_limited", "Refused by a rate limit"
        CANCELLED = "cancelled", "Cancelled"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    run_id = models.CharField(max_length=64, unique=True)
    started_at = models.DateTimeField()
    duration_ms = models.FloatField()
    as_task = models.BooleanField(default=False)
    task_id = models.CharField(max_length=64, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    # Redacted as the activity log redacts (writeOnly and secret-named fields); a run again asks for those anew.
    arguments = models.JSONField(default=dict)
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    # The JSON-RPC messages in the order they went: [{"direction": "sent"|"received", "message": {...}}, ...].
    exchange = models.JSONField(default=list)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["tool", "user", "-started_at"], name="console_run_tool_user_at")]

    def __str__(self) -> str:
        return f"{self.run_id} ({self.outcome})"
