"""ASGI entry point: the MCP endpoints on Channels consumers, everything else on Django."""

import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcp_platform.settings")
django_asgi_app = get_asgi_application()

from mcp_infra.telemetry.spans import tracing_on  # noqa: E402
from mcp_platform.gateway.consumer import McpConsumer  # noqa: E402
from mcp_platform.gateway.legacy_sse import LegacyMessagesConsumer, LegacySseConsumer  # noqa: E402
from mcp_platform.gateway.limits import RequestLimitsMiddleware  # noqa: E402
from mcp_platform.gateway.middleware import GatewayMiddleware  # noqa: E402
from mcp_platform.gateway.routing import TenantEndpointRouter  # noqa: E402
from mcp_platform.telemetry.health import HealthEndpoints  # noqa: E402
from mcp_platform.telemetry.streams import OpenStreamsMiddleware  # noqa: E402

# HTTP only: Django refuses any other scope type (lifespan, websocket), as Channels' ProtocolTypeRouter would.
# The request limits (headers, body deadline) hold on every path, Django's included.
application: Any = RequestLimitsMiddleware(
    GatewayMiddleware(
        # Counts the endpoints' open SSE streams (mcp_open_streams), knowing the tenant the gateway resolved.
        OpenStreamsMiddleware(
            TenantEndpointRouter(
                {
                    "mcp": McpConsumer.as_asgi(),
                    "sse": LegacySseConsumer.as_asgi(),
                    "messages": LegacyMessagesConsumer.as_asgi(),
                },
                # The health probes before Django (its host check would refuse a probe naming the pod's address);
                # the MCP endpoints never pass here.
                fallback=HealthEndpoints(django_asgi_app),
            )
        )
    )
)

if tracing_on():
    # Only when tracing is on (the telemetry app started it): one span per HTTP request, around everything else.
    from mcp_platform.telemetry.tracing import TracingMiddleware

    application = TracingMiddleware(application)
