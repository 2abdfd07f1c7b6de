"""App config of the MCP gateway."""

from django.apps import AppConfig


class GatewayConfig(AppConfig):
    name = "mcp_platform.gateway"
    label = "gateway"
    default_auto_field = "django.db.models.BigAutoField"
