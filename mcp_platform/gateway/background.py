"""Work a serving process runs beside its requests, started on its event loop as the server starts: the upstream
watch (one process of the deployment watches, by lease) and, on embedded defaults, the revision check that lets
clients hear catalog changes made by other processes (commands); and the gateway's part of the process's drain."""

from __future__ import annotations

import asyncio

from channels.layers import InMemoryChannelLayer, get_channel_layer

from mcp_infra.conf import platform_settings
from mcp_infra.serving.drain import process_drain
from mcp_platform.gateway.drain import gateway_drain
from tenants.events import revision_check
from tenants.federation.watch import upstream_watcher

# Held so the tasks are not garbage-collected; they run until the loop ends.
_tasks: set[asyncio.Task[None]] = set()


def start_background(loop: asyncio.AbstractEventLoop) -> None:
    process_drain.register(gateway_drain)
    if platform_settings.UPSTREAM_WATCH:
        _tasks.add(loop.create_task(upstream_watcher.run(), name="upstream watch"))
    interval = platform_settings.CATALOG_REVISION_CHECK
    if interval > 0 and isinstance(get_channel_layer(), InMemoryChannelLayer):
        _tasks.add(loop.create_task(revision_check.run(interval), name="revision check"))
