"""What only the door's pooled httpx client does: ``read_capped`` on a streamed body, and a client per event loop
and tenant whose staff-set widening reaches that tenant's requests only."""

from __future__ import annotations

import pytest

from mcp_infra.outbound import (
    OutboundRefused,
    OutboundResponseTooLarge,
    build_outbound_client,
    outbound_client,
    outbound_clients_close,
    read_capped,
)
from tests.factories import TenantFactory
from tests.loopback_http import LoopbackServer

pytestmark = pytest.mark.anyio


async def test_read_capped_keeps_the_first_bytes_of_a_longer_body(
    server: LoopbackServer, loopback_allowed: None
) -> None:
    async with build_outbound_client(tenant_id=None) as client:
        async with client.stream("GET", f"{server.base}/bytes", params={"n": 5000}) as response:
            with pytest.raises(OutboundResponseTooLarge) as cut:
                await read_capped(response, 100)
        assert cut.value.partial == b"x" * 100
        async with client.stream("GET", f"{server.base}/bytes", params={"n": 100}) as response:
            assert await read_capped(response, 100) == b"x" * 100


@pytest.mark.django_db(transaction=True)
async def test_staff_widening_applies_to_that_tenant_only(server: LoopbackServer) -> None:
    from asgiref.sync import sync_to_async

    widened = await sync_to_async(TenantFactory)(slug="on-prem", outbound_allowed_networks=["127.0.0.0/8"])
    plain = await sync_to_async(TenantFactory)(slug="plain")
    try:
        assert (await outbound_client(tenant_id=widened.pk).get(f"{server.base}/hello")).status_code == 200
        for tenant_id in (plain.pk, None):
            with pytest.raises(OutboundRefused, match="loopback"):
                await outbound_client(tenant_id=tenant_id).get(f"{server.base}/hello")
        assert outbound_client(tenant_id=widened.pk) is outbound_client(tenant_id=widened.pk)
        assert outbound_client(tenant_id=widened.pk) is not outbound_client(tenant_id=plain.pk)
    finally:
        await outbound_clients_close()
    assert server.hits["/hello"] == 1
