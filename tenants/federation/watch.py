"""Watching every enabled upstream for catalog changes from start-up, once for the deployment.

The process holding the ``upstream-watch`` lease (``mcp_infra.leases``) keeps a pooled connection to each enabled
upstream, which listens for its list changes (``subscriptions/listen``, or a handshake-era session's GET stream).
A change is refreshed into the mirror through the services as any list_changed is (revision bump, nudges). A watch
that drops is reopened with backoff and followed by a refresh (changes made meanwhile were not heard); upstreams
added or enabled are picked up, deleted or disabled ones dropped, at each ``UPSTREAM_WATCH_CHECK``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from mcp_infra.conf import platform_settings
from mcp_infra.leases import Lease, deployment_lease
from tenants.federation.connection import UpstreamFailure, UpstreamTarget
from tenants.federation.pool import UpstreamPool, upstream_pool
from tenants.models import Upstream

logger = logging.getLogger(__name__)

LEASE_NAME = "upstream-watch"
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
# A watch that held longer than this was healthy: its next drop starts the backoff again.
HEALTHY_SECONDS = 30.0


@dataclass
class _Watch:
    target: UpstreamTarget
    task: asyncio.Task[None]


class UpstreamWatcher:
    """Holds the lease and one watch task per enabled upstream while it does."""

    def __init__(self, *, pool: UpstreamPool = upstream_pool, lease: Lease | None = None) -> None:
        self._pool = pool
        self._lease = lease
        self._watches: dict[int, _Watch] = {}
        self.holding = False

    async def run(self) -> None:
        """Forever (until cancelled): hold the lease when free, and watch while holding it."""
        check = platform_settings.UPSTREAM_WATCH_CHECK
        lease = self._lease or deployment_lease(LEASE_NAME, ttl=3 * check)
        try:
            while True:
                self.holding = await lease.hold()
                if self.holding:
                    try:
                        await self._follow_upstreams()
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        logger.exception("could not read the upstreams to watch")
                else:
                    self._stop_all()
                await asyncio.sleep(check)
        finally:
            self._stop_all()
            await lease.release()

    async def _follow_upstreams(self) -> None:
        rows = [
            row
            async for row in Upstream.objects.filter(enabled=True).only(
                "pk", "tenant_id", "name", "url", "auth", "revision", "session_mode"
            )
        ]
        wanted = {row.pk: UpstreamTarget.of(row) for row in rows}
        for upstream_id in list(self._watches):
            watch = self._watches[upstream_id]
            target = wanted.get(upstream_id)
            if target is None or target != watch.target or watch.task.done():
                watch.task.cancel()
                del self._watches[upstream_id]
        for upstream_id, target in wanted.items():
            if upstream_id not in self._watches:
                task = asyncio.get_running_loop().create_task(self._watch(target), name=f"watch {target.name}")
                self._watches[upstream_id] = _Watch(target, task)

    def _stop_all(self) -> None:
        for watch in self._watches.values():
            watch.task.cancel()
        self._watches.clear()

    async def _watch(self, target: UpstreamTarget) -> None:
        assert target.upstream_id is not None
        upstream_id = target.upstream_id
        backoff = BACKOFF_FIRST
        loop = asyncio.get_running_loop()
        while True:
            muted = self._pool.muted_for(upstream_id)
            if muted > 0:
                await asyncio.sleep(muted)
            started = loop.time()
            try:
                connection = await self._pool.connection(target)
            except UpstreamFailure as exc:
                logger.info("watching upstream %s: %s; again in %.0f s", target.name, exc, backoff)
            else:
                if connection.listen_ended.is_set() and self._pool.listening(upstream_id):
                    # A connection of the cool-down, or one whose stream already ended: open one that listens.
                    await self._pool.discard(connection)
                    connection = await self._pool.connection(target)
                # Changes made while nobody listened (before start-up, during a drop) are read now.
                self._pool.refresh_soon(upstream_id)
                await connection.watch_ended()
                with contextlib.suppress(Exception):
                    await self._pool.discard(connection)
                if loop.time() - started > HEALTHY_SECONDS:
                    backoff = BACKOFF_FIRST
                logger.info("watching upstream %s: the stream ended; again in %.0f s", target.name, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)


upstream_watcher = UpstreamWatcher()
