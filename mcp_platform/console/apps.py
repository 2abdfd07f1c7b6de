"""The tool console: an admin runs a tool from its page and follows the run live."""

from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "mcp_platform.console"
    label = "console"
    verbose_name = "Tool console"
