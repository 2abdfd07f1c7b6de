"""App config of the quotas room: per-tenant rate limits (what the admin sets, and the token buckets that hold
them on the MCP endpoint)."""

from django.apps import AppConfig


class QuotasConfig(AppConfig):
    name = "mcp_platform.quotas"
    label = "quotas"
    verbose_name = "Quotas and rate limits"
    default_auto_field = "django.db.models.BigAutoField"
