"""App config of the jobs room: long tool runs, the MCP tasks they back, and the Celery work that runs them. At
start-up it has a worker that shuts down hand over the runs it cannot finish."""

from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "mcp_platform.jobs"
    label = "jobs"
    verbose_name = "Tool runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from celery.signals import worker_shutting_down

        from mcp_platform.jobs.execution import hand_over_after_drain

        worker_shutting_down.connect(hand_over_after_drain)
