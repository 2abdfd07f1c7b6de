"""Celery tasks of the tenants app: the scheduled refresh of upstream catalogs (idempotent, run by beat)."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from celery import shared_task
from django.core.exceptions import ValidationError

from tenants.federation.connection import UpstreamFailure
from tenants.federation.services import upstream_refresh
from tenants.models import Upstream

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, ignore_result=True)
def upstreams_refresh() -> dict[str, int]:
    """Queue a refresh of every enabled upstream (one task each, so one slow upstream delays no other)."""
    ids = list(Upstream.objects.filter(enabled=True).values_list("pk", flat=True))
    for upstream_id in ids:
        upstream_refresh_one.delay(upstream_id)
    return {"queued": len(ids)}


def upstream_first_reader(sender: object, *, target: str, **kwargs: object) -> None:
    """``connection_completed`` receiver: an upstream that acts as each person and whose catalog was never read
    (no shared credentials, nobody connected) is read now, with the connection just made."""
    kind, _, pk = target.partition(":")
    unread = Upstream.objects.filter(enabled=True, last_refreshed_at__isnull=True)
    if kind == "upstream" and pk.isdigit() and unread.filter(pk=int(pk)).exists():
        upstream_refresh_one.delay(int(pk))


@shared_task(acks_late=True, ignore_result=True)
def upstream_refresh_one(upstream_id: int) -> str:
    """Re-read one upstream's catalog over a connection of its own; a failure is recorded on the upstream."""
    try:
        report = async_to_sync(upstream_refresh)(upstream_id, pooled=False)
    except (UpstreamFailure, ValidationError) as exc:
        logger.warning("refreshing upstream %s failed: %s", upstream_id, exc)
        return "failed"
    return str(report) if report is not None else "skipped"
