"""App config of the tenants app; fills the Python tool registry with the built-in functions at start-up."""

from __future__ import annotations

from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    label = "tenants"
    verbose_name = "Tenants"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Importing the built-in modules runs their @python_tool / @python_resource_template decorators.
        from tenants.builtin import bench, conformance, conformance_tasks, demo  # noqa: F401
