"""ASGI entry point: the MCP endpoints on Channels consumers, everything else on Django."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcp_platform.settings")
django_asgi_app = get_asgi_application()

from mcp_platform.gateway.consumer import McpConsumer  # noqa: E402
from mcp_platform.gateway.legacy_sse import LegacyMessagesConsumer, LegacySseConsumer  # noqa: E402
from mcp_platform.gateway.limits import RequestLimitsMiddleware  # noqa: E402
from mcp_platform.gateway.middleware import GatewayMiddleware  # noqa: E402
from mcp_platform.gateway.routing import TenantEndpointRouter  # noqa: E402

# HTTP only: Django refuses any other scope type (lifespan, websocket), as Channels' ProtocolTypeRouter would.
# The request limits (headers, body deadline) hold on every path, Django's included.
application = RequestLimitsMiddleware(
    GatewayMiddleware(
        TenantEndpointRouter(
            {
                "mcp": McpConsumer.as_asgi(),
                "sse": LegacySseConsumer.as_asgi(),
                "messages": LegacyMessagesConsumer.as_asgi(),
            },
            fallback=django_asgi_app,
        )
    )
)
