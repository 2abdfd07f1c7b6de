"""Catalog-change nudges on the channel layer, sent after the writing transaction commits.

Listeners join ``catalog_group(tenant_id)`` and hear ``catalog.changed {kind}``, ``resource.updated {uri}`` and
``tenant.changed``; the layer is at-most-once, so the database stays the truth: each change also bumps the
tenant's ``revision`` in the writing transaction, which per-process caches (``tenants.cache``) check.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from tenants.cache import tenant_cache
from tenants.models import Tenant

logger = logging.getLogger(__name__)

CatalogKind = Literal["tools", "resources", "prompts"]
CATALOG_KINDS: tuple[CatalogKind, ...] = ("tools", "resources", "prompts")

# Sends scheduled on a running loop; held so the tasks are not garbage-collected before they finish.
_pending_sends: set[asyncio.Task[None]] = set()


def catalog_group(tenant_id: int) -> str:
    """The channel-layer group that hears about catalog changes of one tenant."""
    return f"catalog.{tenant_id}"


def catalog_changed(*, tenant_id: int, kind: CatalogKind) -> None:
    """After commit, tell listeners the tenant's list of ``kind`` changed."""
    if kind not in CATALOG_KINDS:
        raise ValueError(f"unknown catalog kind {kind!r}")
    _publish_on_commit(tenant_id, {"type": "catalog.changed", "kind": kind})


def resource_updated(*, tenant_id: int, uri: str) -> None:
    """After commit, tell listeners the content of the resource at ``uri`` changed."""
    _publish_on_commit(tenant_id, {"type": "resource.updated", "uri": uri})


def tenant_changed(*, tenant_id: int) -> None:
    """After commit, tell caches the tenant itself changed (status, origins, authorization, identity)."""
    _publish_on_commit(tenant_id, {"type": "tenant.changed"})


def server_changed(*, tenant_id: int) -> None:
    """After commit, tell listeners one of the tenant's servers changed (its selection, identity or scopes): caches
    and stream access hear ``tenant.changed``, streams a change of every list (each server's stream notifies its
    client only if its own lists changed)."""
    kinds = [{"type": "catalog.changed", "kind": kind} for kind in CATALOG_KINDS]
    _publish_on_commit(tenant_id, {"type": "tenant.changed"}, *kinds)


def _publish_on_commit(tenant_id: int, *messages: dict[str, Any]) -> None:
    group = catalog_group(tenant_id)
    # The durable half, in the writing transaction: caches that miss the nudge still see a new revision.
    Tenant.objects.filter(pk=tenant_id).update(revision=F("revision") + 1)

    def after_commit() -> None:
        revision_check.committed_here(tenant_id)
        tenant_cache.forget(tenant_id)
        # Receivers route by group (one channel per process hears many groups), so the message names it.
        for message in messages:
            _publish(group, {**message, "group": group})

    transaction.on_commit(after_commit)


async def _send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(group, message)
    except Exception:
        # A lost nudge costs a client a stale list until it asks again; it must never fail the write.
        logger.exception("could not publish %s to %s", message.get("type"), group)


def _publish(group: str, message: dict[str, Any]) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        async_to_sync(_send)(group, message)
        return
    task = loop.create_task(_send(group, message))
    _pending_sends.add(task)
    task.add_done_callback(_pending_sends.discard)


class RevisionCheck:
    """Embedded defaults (the in-memory channel layer reaches no other process): the serving process reads the
    revisions of the tenants it serves every ``CATALOG_REVISION_CHECK`` seconds, and a revision that moved without a
    commit here (a command, another process) is announced to this process's listeners as a change of every list.
    One indexed query of at most ``tenants.cache.MAX_TENANTS`` rows per interval."""

    def __init__(self) -> None:
        self._seen: dict[int, int] = {}
        self._here: set[int] = set()
        self.announced = 0

    def committed_here(self, tenant_id: int) -> None:
        # Its listeners heard this commit already: the next check takes the new revision without announcing it.
        self._here.add(tenant_id)

    async def check(self) -> None:
        cached = tenant_cache.tenant_revisions()
        here, self._here = self._here, set()
        current = {
            pk: revision async for pk, revision in Tenant.objects.filter(pk__in=cached).values_list("pk", "revision")
        }
        for tenant_id, revision in current.items():
            # A tenant checked for the first time is compared with the revision it was cached at: a change made
            # between its caching and this check is a change its listeners have not heard.
            before = self._seen.get(tenant_id, cached[tenant_id])
            self._seen[tenant_id] = revision
            if before != revision and tenant_id not in here:
                self.announced += 1
                tenant_cache.forget(tenant_id)
                group = catalog_group(tenant_id)
                for kind in CATALOG_KINDS:
                    await _send(group, {"type": "catalog.changed", "kind": kind, "group": group})
        for tenant_id in set(self._seen) - set(current):
            del self._seen[tenant_id]

    async def run(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.check()
            except Exception:
                logger.exception("could not check the tenants' revisions")


revision_check = RevisionCheck()
