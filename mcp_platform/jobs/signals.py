"""Signals of the jobs room, for the rooms that watch tool runs without the jobs room knowing them."""

from __future__ import annotations

from django.dispatch import Signal

# A run reached a terminal status (completed, failed, cancelled), sent after commit with ``run`` (the ``ToolRun``,
# its ``finished_at`` set). Receivers must not raise or block: they run where the transition ran (a worker, or
# the web process that cancelled the run).
tool_run_ended = Signal()
