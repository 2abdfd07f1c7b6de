"""The activity app: registers the call hook that feeds the log's in-memory writer, and the receivers of admin
changes, bulk changes, token exchanges and events of people's own connections."""

from __future__ import annotations

from django.apps import AppConfig


class ActivityConfig(AppConfig):
    name = "mcp_platform.activity"
    label = "activity"
    verbose_name = "Activity and usage"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from mcp_infra.conf import platform_settings
        from mcp_platform.activity.hook import (
            activity_hook,
            admin_change_recorded,
            bulk_change_recorded,
            connection_recorded,
            token_exchange_recorded,
            tool_run_recorded,
        )
        from mcp_platform.jobs.signals import tool_run_ended
        from mcp_platform.oauth.signals import token_exchanged
        from mcp_platform.observe.calls import register_hook
        from tenants.admin.audit import admin_changed
        from tenants.bulk_changes import catalog_bulk_changed
        from tenants.connections.signals import connection_event

        admin_changed.connect(admin_change_recorded, dispatch_uid="activity-admin-changes")
        # Bulk changes to a catalog are admin changes: recorded whatever ``ACTIVITY_LOG`` says of calls.
        catalog_bulk_changed.connect(bulk_change_recorded, dispatch_uid="activity-bulk-changes")
        # Token exchanges are an audit trail of who acted as whom: recorded whatever ``ACTIVITY_LOG`` says too.
        token_exchanged.connect(token_exchange_recorded, dispatch_uid="activity-token-exchanges")
        # So are people's connections: who connected, disconnected or was disconnected, and when a refresh failed.
        connection_event.connect(connection_recorded, dispatch_uid="activity-connection-events")
        if platform_settings.ACTIVITY_LOG:
            register_hook(activity_hook)
            # Calls that became tasks are recorded when the run ends, in whichever process that is.
            tool_run_ended.connect(tool_run_recorded, dispatch_uid="activity-tool-runs")
