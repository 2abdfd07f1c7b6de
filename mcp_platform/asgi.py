"""ASGI entry point: the MCP endpoints on Channels consumers, everything else on Django."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcp_platform.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path, re_path  # noqa: E402

from mcp_platform.gateway.consumer import McpConsumer  # noqa: E402
from mcp_platform.gateway.legacy_sse import LegacyMessagesConsumer, LegacySseConsumer  # noqa: E402
from mcp_platform.gateway.middleware import GatewayMiddleware  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": GatewayMiddleware(
            URLRouter(
                [
                    path("t/<slug:tenant>/mcp", McpConsumer.as_asgi()),
                    path("t/<slug:tenant>/sse", LegacySseConsumer.as_asgi()),
                    path("t/<slug:tenant>/messages", LegacyMessagesConsumer.as_asgi()),
                    re_path(r"", django_asgi_app),  # type: ignore[arg-type]
                ]
            )
        ),
    }
)
