"""App config of telemetry: at start-up it registers the call hooks (metrics always; the JSON request log with
``LOG_FORMAT=json``; traces when configured) and times the Celery tasks this process runs."""

from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings


class TelemetryConfig(AppConfig):
    name = "mcp_platform.telemetry"
    label = "telemetry"

    def ready(self) -> None:
        from mcp_platform.observe.calls import register_hook
        from mcp_platform.telemetry.celery_metrics import celery_metrics_connect
        from mcp_platform.telemetry.hooks import MetricsHook, RequestLogHook

        register_hook(MetricsHook())
        if getattr(settings, "LOG_FORMAT", "plain") == "json":
            register_hook(RequestLogHook())
        celery_metrics_connect()
        from mcp_infra.telemetry.spans import tracing_requested

        if tracing_requested():
            # Only now: with tracing off, no opentelemetry module is ever imported.
            from mcp_platform.telemetry.tracing import tracing_start

            tracing_start()
