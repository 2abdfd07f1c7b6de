"""The jobs room's Celery tasks by name, and the one way to queue one: the services send a message by name, so
only ``tasks`` (which runs the services' work) imports Celery's task objects."""

from __future__ import annotations

from typing import Any

from celery import current_app

# The names ``tasks`` registers its tasks under (also those the beat schedule in the settings names).
TOOL_RUN_EXECUTE = "mcp_platform.jobs.tasks.tool_run_execute"
TOOL_RUNS_RESUME_STALLED = "mcp_platform.jobs.tasks.tool_runs_resume_stalled"
TOOL_RUNS_PURGE_EXPIRED = "mcp_platform.jobs.tasks.tool_runs_purge_expired"


def enqueue(name: str, *args: Any, countdown: float | None = None) -> None:
    """Send one message for the task ``name`` to the project's Celery app, to run ``countdown`` seconds from now
    (at once when None). Raises what the broker raises when it cannot take the message (down, restarting)."""
    current_app.send_task(name, args=args, countdown=countdown)
