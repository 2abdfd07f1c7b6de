"""Fixtures for the tenants tests: tenants, a fresh in-memory channel layer, a recording outbound sink."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, channel_layers, get_channel_layer

from mcp_core.context import RequestContext
from tenants.events import catalog_group
from tenants.models import Tenant
from tests.factories import TenantFactory
from tests.support import RecordingOutbound

JSONObject = dict[str, Any]


@pytest.fixture
def tenant() -> Tenant:
    return TenantFactory(slug="acme", name="Acme")


@pytest.fixture
def other_tenant() -> Tenant:
    return TenantFactory(slug="globex", name="Globex")


@pytest.fixture
def channel_layer(settings: Any) -> Iterator[BaseChannelLayer]:
    """A fresh in-memory layer, whatever REDIS_URL says, dropped after the test."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    layer = get_channel_layer()
    assert layer is not None
    yield layer
    channel_layers.backends.clear()


class CatalogListener:
    """A channel subscribed to one tenant's catalog group, read with bounded waits."""

    def __init__(self, layer: BaseChannelLayer, tenant_id: int) -> None:
        self.layer = layer
        self.group = catalog_group(tenant_id)
        self.channel = async_to_sync(layer.new_channel)()
        async_to_sync(layer.group_add)(self.group, self.channel)

    def receive(self, timeout: float = 2.0) -> JSONObject:
        """The next message, checked to name this tenant's group (receivers route by it) and shown without it."""

        async def wait() -> JSONObject:
            return await asyncio.wait_for(self.layer.receive(self.channel), timeout)

        message = async_to_sync(wait)()
        assert message.pop("group") == self.group
        return message

    def nothing_pending(self, timeout: float = 0.05) -> bool:
        """True when no message arrives within ``timeout`` (publishing is synchronous, so this is enough)."""
        try:
            self.receive(timeout)
        except TimeoutError:
            return True
        return False


@pytest.fixture
def listen(channel_layer: BaseChannelLayer) -> Any:
    def subscribe(tenant: Tenant) -> CatalogListener:
        return CatalogListener(channel_layer, tenant.pk)

    return subscribe


@pytest.fixture
def make_context() -> Any:
    """Build a real ``RequestContext`` over a ``RecordingOutbound``; returns ``(ctx, outbound)``."""

    def build(
        *,
        capabilities: JSONObject | None = None,
        answers: dict[str, JSONObject] | None = None,
        arguments: JSONObject | None = None,
        progress_token: str | int | None = None,
        log_level: str | None = None,
        stateless: bool = False,
    ) -> tuple[RequestContext, RecordingOutbound]:
        outbound = RecordingOutbound(answers)
        ctx = RequestContext(
            outbound=outbound,
            client_capabilities=capabilities or {},
            arguments=arguments or {},
            progress_token=progress_token,
            log_level=log_level,
            stateless=stateless,
        )
        return ctx, outbound

    return build
