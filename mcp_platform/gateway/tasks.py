"""Celery tasks of the gateway: housekeeping of sessions and stored stream events (idempotent)."""

from datetime import timedelta

from celery import shared_task

from mcp_infra.conf import platform_settings
from mcp_platform.gateway.models import LegacySession
from mcp_platform.gateway.sessions import legacy_sessions_purge_idle, stream_events_purge


@shared_task(acks_late=True, ignore_result=True)
def legacy_sessions_purge_expired() -> dict[str, int]:
    """Delete sessions that ended or idled past the timeout, and events past their retention."""
    sessions = legacy_sessions_purge_idle(idle_for=timedelta(seconds=platform_settings.SESSION_IDLE_TIMEOUT))
    events = stream_events_purge(older_than=timedelta(seconds=platform_settings.EVENT_RETENTION))
    return {"sessions": sessions, "events": events, "open": LegacySession.objects.count()}
