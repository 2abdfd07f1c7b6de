"""App config of the jobs room: long tool runs, the MCP tasks they back, and the Celery work that runs them."""

from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "mcp_platform.jobs"
    label = "jobs"
    verbose_name = "Tool runs"
    default_auto_field = "django.db.models.BigAutoField"
