"""The tool console: an admin runs a tool from its page and follows the run live."""

from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "mcp_platform.console"
    label = "console"
    verbose_name = "Tool console"

    def ready(self) -> None:
        # The tool admin (tenants.admin, below this app) serves the console's pages and links them from a tool's page.
        from mcp_platform.console.pages import CONSOLE_PAGE
        from tenants.admin.pages import tool_pages

        tool_pages.add(CONSOLE_PAGE)
