"""App configs of the tenants app (fills the Python tool registry with the built-in functions at start-up) and of
the admin with the platform's site as ``admin.site``. Both live here because app configs load before models, and
the site needs them."""

from __future__ import annotations

from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class TenantsConfig(AppConfig):
    name = "tenants"
    label = "tenants"
    verbose_name = "Tenants"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Importing the built-in modules runs their @python_tool / @python_resource_template decorators; importing
        # the upstream services wires the upstream pool's list_changed notifications to catalog refreshes.
        from mcp_infra.outbound import register_tenant_networks
        from tenants.admin.audit import bulk_change_history
        from tenants.backends.plugs import backends_load
        from tenants.builtin import bench, conformance, conformance_tasks, demo  # noqa: F401
        from tenants.bulk_changes import catalog_bulk_changed
        from tenants.connections.signals import connection_completed
        from tenants.federation import services  # noqa: F401
        from tenants.federation.tasks import upstream_first_reader
        from tenants.selectors import tenant_outbound_networks

        backends_load()
        catalog_bulk_changed.connect(bulk_change_history, dispatch_uid="tenants-admin-history")
        connection_completed.connect(upstream_first_reader, dispatch_uid="tenants-upstream-first-reader")
        # The outbound door sits below the tenants app: it is told how to read a tenant's allowed networks.
        register_tenant_networks(tenant_outbound_networks)


class PlatformAdminConfig(admin_apps.AdminConfig):
    """Django's admin (with autodiscovery) whose ``admin.site`` is the platform's one site instance."""

    default = False  # "tenants" in INSTALLED_APPS means TenantsConfig; this one is named in full
    default_site = "tenants.admin.site.platform_site"
