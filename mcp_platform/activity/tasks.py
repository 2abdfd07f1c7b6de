"""Periodic upkeep of the activity log (Celery beat)."""

from __future__ import annotations

from celery import shared_task

from mcp_platform.activity.services import activity_purge_expired as purge


@shared_task(acks_late=True)
def activity_purge_expired() -> int:
    """Delete rows past each tenant's retention (idempotent: run it as often as beat likes)."""
    return purge()
