"""App config of the MCP gateway; at start-up it lets the tenant cache hear catalog nudges on the mailbox, and tells
a person's sessions when they finished connecting an account (``elicitations``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.apps import AppConfig


@dataclass(frozen=True)
class _NudgeHandler:
    """A mailbox handler that calls ``on_nudge`` for any message of the tenant's catalog group (equal by value,
    so unsubscribing with a new instance removes the old one)."""

    on_nudge: Callable[[], None]

    def __call__(self, message: dict[str, Any]) -> None:
        self.on_nudge()


async def listen_for_nudges(tenant_id: int, on_nudge: Callable[[], None]) -> None:
    from mcp_infra.messaging.mailbox import mailbox
    from tenants.events import catalog_group

    await mailbox().subscribe(catalog_group(tenant_id), _NudgeHandler(on_nudge))


async def stop_listening_for_nudges(tenant_id: int, on_nudge: Callable[[], None]) -> None:
    from mcp_infra.messaging.mailbox import mailbox
    from tenants.events import catalog_group

    await mailbox().unsubscribe(catalog_group(tenant_id), _NudgeHandler(on_nudge))


class GatewayConfig(AppConfig):
    name = "mcp_platform.gateway"
    label = "gateway"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from mcp_infra.conf import platform_settings
        from mcp_platform.gateway.elicitations import connection_completed_received
        from tenants.cache import tenant_cache
        from tenants.connections.signals import connection_completed

        tenant_cache.configure(
            ttl=lambda: float(platform_settings.TENANT_CACHE_TTL),
            listen=listen_for_nudges,
            unlisten=stop_listening_for_nudges,
        )
        connection_completed.connect(connection_completed_received, dispatch_uid="gateway.elicitation_complete")
