"""A handshake-era session's long-lived stream: catalog changes, session signals and notifications for the session
(``session_notify``), from any process, become server messages on it. Shared by the Streamable HTTP GET stream and
the 2024-11-05 HTTP+SSE stream.

The caller's access is checked again before each catalog event and at each keep-alive (``StreamAccess``): a
stream whose token was revoked, whose member was removed or whose tenant was suspended ends.
"""

from __future__ import annotations

from typing import Any

from mcp_core.features.subscriptions import LIST_CHANGED, RESOURCE_UPDATED
from mcp_infra.conf import platform_settings
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import Inbox, send_to_group
from mcp_platform.gateway import sessions
from mcp_platform.gateway.models import LegacySession
from mcp_platform.gateway.server_lists import ServerLists
from mcp_platform.gateway.stream_access import StreamAccess

# A message on the session's group that is a notification for its client (``session_notify``).
NOTIFICATION = "notification"


async def session_notify(*, tenant_id: int, session_id: str, method: str, params: dict[str, Any]) -> None:
    """Send a notification to the session's long-lived stream, wherever it is open (at most once: a session whose
    stream is not open does not hear it)."""
    message = {"kind": NOTIFICATION, "method": method, "params": params}
    await send_to_group(groups.session_group(tenant_id, session_id), message)


class SessionStreamMixin:
    """For a consumer holding a session's stream: drain its ``Inbox`` into ``_push`` until ``_closed`` is true.

    Subclasses write a server message (``_push``), act on the session's own signals (``mailbox_message``), keep
    the connection alive when nothing happens (``_idle``) and end the response (``_close_stream``). A stream of a
    named server sets ``_lists`` (and starts it once it joined the catalog group): only changes of its own lists and
    resources reach its client.
    """

    scope: dict[str, Any]
    session: LegacySession
    _closed: bool
    _lists: ServerLists | None = None

    async def _close_stream(self) -> None:
        raise NotImplementedError

    async def _push(self, method: str, params: dict[str, Any]) -> None:
        raise NotImplementedError

    async def mailbox_message(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    async def _idle(self) -> None:
        raise NotImplementedError

    async def server_draining(self, message: dict[str, Any]) -> None:
        """This process drains (``gateway.drain``): end the stream after its last event; the client reconnects."""
        await self._close_stream()

    async def catalog_changed(self, message: dict[str, Any]) -> None:
        kind = message.get("kind", "")
        method = LIST_CHANGED.get(kind)
        if method is not None and (self._lists is None or await self._lists.changed(kind)):
            await self._push(method, {})

    async def resource_updated(self, message: dict[str, Any]) -> None:
        uri = message.get("uri")
        if not isinstance(uri, str) or (self._lists is not None and not await self._lists.serves_resource(uri)):
            return
        if uri in await sessions.legacy_session_subscriptions(session_id=self.session.pk):
            await self._push(RESOURCE_UPDATED, {"uri": uri})

    async def session_message(self, message: dict[str, Any]) -> None:
        """A message of the session's group: a notification for the client (``session_notify``), or one of the
        stream's own."""
        method, params = message.get("method"), message.get("params")
        if message.get("kind") == NOTIFICATION and isinstance(method, str) and isinstance(params, dict):
            await self._push(method, params)
        else:
            await self.mailbox_message(message)

    async def _pump(self, inbox: Inbox) -> None:
        """Turn the inbox's messages into events until the stream closes; ``_idle`` between them."""
        access = StreamAccess.of(self.scope)
        handlers = {
            "catalog.changed": self.catalog_changed,
            "resource.updated": self.resource_updated,
            "mailbox.message": self.session_message,
            "server.draining": self.server_draining,
        }
        # The tenant's own changes (suspension, authorization required) are heard on the same group.
        checked = {"catalog.changed", "resource.updated", "tenant.changed"}
        while not self._closed:
            message = await inbox.next(platform_settings.SSE_KEEPALIVE)
            kind = "" if message is None else message.get("type", "")
            if (message is None or kind in checked) and not await access.allowed():
                await self._close_stream()
                return
            if message is None:
                await self._idle()
                continue
            handler = handlers.get(kind)
            if handler is not None:
                await handler(message)
