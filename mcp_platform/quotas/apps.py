"""App config of the quotas room: per-tenant rate limits (what the admin sets, and the token buckets that hold
them on the MCP endpoint). Its ``ready()`` puts rate limits in the catalog's history (``tenants.history``), which
sits below this app and is told about them rather than importing them."""

from __future__ import annotations

from django.apps import AppConfig


class QuotasConfig(AppConfig):
    name = "mcp_platform.quotas"
    label = "quotas"
    verbose_name = "Quotas and rate limits"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from mcp_platform.quotas.models import RateLimit
        from mcp_platform.quotas.services import RATE_LIMIT_FIELDS, rate_limit_create, rate_limit_update
        from tenants.history.versioned import Versioned, restore_through, versioned_register

        restore = restore_through(rate_limit_create, rate_limit_update, "limit")
        versioned_register(Versioned(RateLimit, RATE_LIMIT_FIELDS, restore, saves_unchanged=True))
