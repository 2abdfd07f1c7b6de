"""``ToolRun``: one tool call that runs as an MCP task, durable from creation to purge.

Everything a task is lives here, so any web process can answer for it and any worker can run it: its status
(``mcp_core.tasks`` decides the transitions), its result or error, its open questions and the answers so far,
whose it is (tenant, principal, session) and whose allowance of unfinished tasks it uses, how long it lives, and
where its current start is: queued, or leased by the worker running it.
"""

from __future__ import annotations

from typing import NamedTuple

from django.db import models
from django.db.models import Q

from mcp_core.tasks import TaskStatus


class ToolRun(models.Model):
    class Status(models.TextChoices):
        WORKING = TaskStatus.WORKING.value, "Working"
        INPUT_REQUIRED = TaskStatus.INPUT_REQUIRED.value, "Waiting for the client"
        COMPLETED = TaskStatus.COMPLETED.value, "Completed"
        FAILED = TaskStatus.FAILED.value, "Failed"
        CANCELLED = TaskStatus.CANCELLED.value, "Cancelled"

    # The task id: random and unguessable (it is all a caller needs besides its credentials).
    id = models.CharField(primary_key=True, max_length=64)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="tool_runs")
    # Whose task it is: "user:<id> client:<id>" for OAuth callers, "anonymous" on public tenants;
    # handshake-era tasks also belong to the session that started them.
    principal = models.CharField(max_length=200)
    session_id = models.CharField(max_length=64, blank=True)
    # Whose allowance of unfinished tasks the run uses: the principal, or on a public tenant the anonymous
    # client's address (``selectors.Caller.quota_key``), so one anonymous client cannot use up everyone's.
    quota_key = models.CharField(max_length=200, default="")
    protocol_version = models.CharField(max_length=16)
    tool_name = models.CharField(max_length=128)
    arguments = models.JSONField(default=dict)
    client_capabilities = models.JSONField(default=dict)
    log_level = models.CharField(max_length=16, blank=True)
    progress_token = models.JSONField(null=True, blank=True)

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.WORKING)
    status_message = models.TextField(blank=True)
    # The latest progress the running call reported (any era), written by the worker at most twice a second
    # (``jobs.progress``): what the admin shows while the run works. None until the call reports any.
    progress = models.FloatField(null=True, blank=True)
    progress_total = models.FloatField(null=True, blank=True)
    progress_message = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    # Open questions (key -> {method, params}) and answers so far (key -> [question digest, result]).
    input_requests = models.JSONField(default=dict, blank=True)
    input_answers = models.JSONField(default=dict, blank=True)
    # A call proxied to an upstream's own task: which task it follows ({upstream, taskId, answered}), kept so that
    # a later start (after input, or on another worker after this one died) follows it instead of starting anew.
    upstream_task = models.JSONField(null=True, blank=True)

    ttl_ms = models.PositiveBigIntegerField()
    expires_at = models.DateTimeField(db_index=True)
    # Each (re)start of the call gets the next generation; a worker message for an older one is stale.
    generation = models.PositiveIntegerField(default=1)
    attempts = models.PositiveIntegerField(default=0)
    # The current start: queued for a worker since ``scheduled_at`` (None: its message could not be sent), then
    # claimed by one worker, whose lease it renews until ``lease_until``. The sweep queues a start that no worker
    # claimed in time again, and starts anew (``takeovers``) one whose lease lapsed.
    scheduled_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    takeovers = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # When the run reached its terminal status (completed, failed, cancelled): its duration is from ``created_at``.
    finished_at = models.DateTimeField(null=True, blank=True)
    # Where the call came from, as the activity log records it once the run ends (``RunOrigin``): the client's
    # name and version, the transport and the JSON-RPC request id.
    origin = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "quota_key", "status"], name="jobs_toolrun_quota"),
            # What the sweep looks at: working runs only, by lease and by queueing time.
            models.Index(
                fields=["lease_until", "scheduled_at"], condition=Q(status="working"), name="jobs_toolrun_stalled"
            ),
            models.Index(fields=["tenant", "principal", "session_id", "created_at"], name="jobs_toolrun_listing"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} {self.id[:8]}… ({self.status})"


class RunOrigin(NamedTuple):
    """The request that started a run, as the activity log records the call when the run ends."""

    client_name: str = ""
    client_version: str = ""
    transport: str = ""
    request_id: str = ""
    # The platform's address as the client reached it: where links the run's questions carry point.
    base_url: str = ""
    # The tenant's named server the request went to ("" for its default server).
    server: str = ""
