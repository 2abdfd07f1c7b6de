"""App config of the catalog's history: registers the tenant domain's versioned models at start-up (the runtime apps
register theirs in their own ``ready()``, as the quotas app does for rate limits)."""

from __future__ import annotations

from django.apps import AppConfig


class HistoryConfig(AppConfig):
    name = "tenants.history"
    label = "catalog_history"
    verbose_name = "Catalog history"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from tenants.history.entries import tenants_versioned_register
        from tenants.history.revisions import version_on_save

        tenants_versioned_register()
        post_save.connect(version_on_save, dispatch_uid="catalog-history-versions")
