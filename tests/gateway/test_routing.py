"""``/t/<tenant>/<endpoint>`` and ``/t/<tenant>/s/<server>/<endpoint>`` reach their consumer; anything else reaches
Django."""

from __future__ import annotations

import pytest

from mcp_platform.gateway.routing import TenantEndpointRouter


async def mcp(scope: dict, receive: object, send: object) -> None:  # pragma: no cover - identity only
    raise AssertionError


async def django(scope: dict, receive: object, send: object) -> None:  # pragma: no cover - identity only
    raise AssertionError


ROUTER = TenantEndpointRouter({"mcp": mcp}, fallback=django)


@pytest.mark.parametrize(
    ("path", "app"),
    [
        ("/t/acme/mcp", mcp),
        ("/t/acme/mcp/", django),
        ("/t/acme/other", django),
        ("/t//mcp", django),
        ("/x/acme/mcp", django),
        ("/t/acme/mcp/extra", django),
        ("/t/acme/s/reader/mcp", mcp),
        ("/t/acme/s/reader/mcp/", django),
        ("/t/acme/s//mcp", django),
        ("/t/acme/x/reader/mcp", django),
        ("/t/acme/s/reader/other", django),
        ("/admin/", django),
    ],
)
def test_only_an_exact_tenant_endpoint_path_reaches_its_consumer(path: str, app: object) -> None:
    assert ROUTER.app_for(path) is app
