"""The configuration-as-code app: a tenant's configuration as a file, exported and applied by commands and by the
tenant's admin page, whose pages it adds to the tenant admin at ``ready()``."""

from __future__ import annotations

from django.apps import AppConfig


class CatalogFilesConfig(AppConfig):
    name = "mcp_platform.catalog_files"
    label = "catalog_files"
    verbose_name = "Configuration as code"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The tenant admin (tenants.admin, below this app) serves the configuration pages and links them from the
        # tenant's page; tenants never imports this app.
        from mcp_platform.catalog_files.pages import CONFIGURATION_PAGE
        from tenants.admin.pages import tenant_pages

        tenant_pages.add(CONFIGURATION_PAGE)
