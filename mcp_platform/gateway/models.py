"""Durable gateway state: handshake-era sessions and the SSE events kept for ``Last-Event-ID`` replay."""

from django.db import models


class LegacySession(models.Model):
    """A handshake-era MCP session (2024-11-05 … 2025-11-25). Any web process may serve any of its requests."""

    class Transport(models.TextChoices):
        STREAMABLE_HTTP = "streamable", "Streamable HTTP"
        HTTP_SSE = "sse", "HTTP+SSE (2024-11-05)"

    id = models.CharField(primary_key=True, max_length=64)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="legacy_sessions")
    # Whom the session acts for (``oauth.resource.principal_label``): only that principal's requests find it.
    principal = models.CharField(max_length=200, default="anonymous")
    # The slug of the tenant's named server the session was opened on ("" for its default server): only that
    # server's URL finds it.
    server = models.CharField(max_length=63, blank=True, default="")
    transport = models.CharField(max_length=16, choices=Transport.choices, default=Transport.STREAMABLE_HTTP)
    state = models.CharField(max_length=16)
    protocol_version = models.CharField(max_length=16, blank=True)
    client_capabilities = models.JSONField(default=dict)
    client_info = models.JSONField(default=dict)
    log_level = models.CharField(max_length=16, blank=True)
    subscriptions = models.JSONField(default=list)
    # The one standalone GET stream of the session and when it last proved alive (a lease, not a lock).
    standalone_stream_id = models.CharField(max_length=64, blank=True)
    standalone_seen_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "state"])]

    def __str__(self) -> str:
        return f"{self.tenant_id}:{self.id[:8]}… ({self.protocol_version or 'new'}, {self.state})"


class StreamEvent(models.Model):
    """One SSE event of one stream of a session, stored before it is sent so a reconnecting client can replay it."""

    session = models.ForeignKey(LegacySession, on_delete=models.CASCADE, related_name="events")
    stream_id = models.CharField(max_length=64)
    seq = models.PositiveIntegerField()
    payload = models.TextField(blank=True)
    # The stream ends after this event (the last response of a POST stream).
    is_final = models.BooleanField(default=False)
    # Only on a POST stream's opening event (seq 0): when the process running its requests last proved alive (a
    # lease renewed with each keep-alive); NULL once a resumer found it lapsed and ended the stream in its place.
    run_seen_at = models.DateTimeField(null=True, blank=True)
    # Only on a POST stream's opening event: when a client resuming the stream (GET with Last-Event-ID) last proved
    # alive. A request whose own connection closed and that nobody follows within the grace is cancelled.
    followed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "stream_id", "seq"], name="stream_event_unique_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.stream_id}.{self.seq}"
