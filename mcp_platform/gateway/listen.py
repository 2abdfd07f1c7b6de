"""``subscriptions/listen`` streams (2026-07-28): an SSE response that stays open and carries the catalog changes
the client asked for, heard on the tenant's channel-layer group so a change made by any process arrives, and the
status of the caller's tasks it named (``notifications/tasks``), heard on each task's group.

The stream opens with the acknowledgement, then sends notifications and keep-alive comments until the client
closes it (which is how it cancels), until its caller may no longer hear it (``StreamAccess``, asked before
each notification and at each keep-alive), or until this process drains (the client listens again, elsewhere).
Nothing is stored: the stream is not resumable in this era.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from mcp_core import jsonrpc, sse
from mcp_core.features.subscriptions import Subscription
from mcp_core.tasks import TaskSnapshot, TaskStore, detailed_task
from mcp_infra.conf import platform_settings
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import Inbox
from mcp_platform.gateway.drain import SERVER_DRAINING, ending_on_drain
from mcp_platform.gateway.responses import Send, send_chunk, start_sse
from mcp_platform.gateway.server_lists import ServerLists
from mcp_platform.gateway.stream_access import StreamAccess
from tenants.events import catalog_group

logger = logging.getLogger(__name__)


class ListenStream:
    """One open listen stream; the consumer hands it the catalog events of its tenant's group."""

    def __init__(self, send: Send, subscription: Subscription) -> None:
        self._send = send
        self.subscription = subscription
        self._lock = asyncio.Lock()
        # The last state sent per task: two nudges read after the same change must not send it twice.
        self._sent: dict[str, tuple[str, object]] = {}

    async def _write(self, message: tuple[str, dict[str, Any]] | None) -> None:
        if message is None:
            return
        async with self._lock:
            await send_chunk(self._send, sse.event(jsonrpc.encode_notification(*message)))

    async def open(self) -> None:
        """Response headers, then the acknowledgement as the first message."""
        async with self._lock:
            await start_sse(self._send)
        await self._write(self.subscription.acknowledgement())

    async def catalog_changed(self, message: dict[str, Any]) -> None:
        await self._write(self.subscription.on_catalog_changed(str(message.get("kind", ""))))

    async def resource_updated(self, message: dict[str, Any]) -> None:
        uri = message.get("uri")
        if isinstance(uri, str):
            await self._write(self.subscription.on_resource_updated(uri))

    async def keep_alive(self) -> None:
        async with self._lock:
            await send_chunk(self._send, sse.comment())

    async def end(self) -> None:
        async with self._lock:
            await send_chunk(self._send, b"", more=False)

    async def task_changed(self, task: TaskSnapshot | None) -> None:
        if task is None or self._sent.get(task.task_id) == (task.status, task.last_updated_at):
            return
        self._sent[task.task_id] = (task.status, task.last_updated_at)
        await self._write(self.subscription.on_task(detailed_task(task)))


async def serve_listen(
    *,
    send: Send,
    subscription: Subscription,
    tenant_id: int,
    tasks: TaskStore,
    access: StreamAccess,
    lists: ServerLists | None = None,
) -> None:
    """Join the tenant's catalog group and the groups of the caller's tasks it asked about, acknowledge, send those
    tasks as they are now, and stay until cancelled, no longer ``access.allowed()``, or the process drains. Joining
    comes first so a change committed right after the acknowledgement is not missed. On a named server, ``lists``
    passes on only the changes of the server's own lists and resources."""
    task_groups = {groups.task_group(tenant_id, task_id): task_id for task_id in subscription.task_ids}
    inbox = Inbox()
    await inbox.join(catalog_group(tenant_id), *task_groups)
    try:
        if lists is not None:
            await lists.start()
        with ending_on_drain(inbox):
            current = {task_id: await tasks.get(task_id) for task_id in subscription.task_ids}
            followed = [task_id for task_id, task in current.items() if task is not None]
            stream = ListenStream(send, subscription.honouring_tasks(followed))
            await stream.open()
            for task_id in followed:
                await stream.task_changed(current[task_id])
            while True:
                message = await inbox.next(platform_settings.SSE_KEEPALIVE)
                if message == SERVER_DRAINING or not await access.allowed():
                    await stream.end()
                    return
                if message is None:
                    await stream.keep_alive()
                elif message.get("type") == "catalog.changed":
                    if lists is None or await lists.changed(str(message.get("kind", ""))):
                        await stream.catalog_changed(message)
                elif message.get("type") == "resource.updated":
                    uri = message.get("uri")
                    if lists is None or (isinstance(uri, str) and await lists.serves_resource(uri)):
                        await stream.resource_updated(message)
                elif message.get("kind") == "status" and message.get("group") in task_groups:
                    await stream.task_changed(await tasks.get(task_groups[message["group"]]))
    finally:
        await inbox.leave()
