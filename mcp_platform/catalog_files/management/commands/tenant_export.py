"""``manage.py tenant_export <tenant> [-o FILE]``: a tenant's catalog, sources, rate limits and settings as a
configuration file (YAML; secrets by name only), for review in a pull request and ``tenant_apply``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_infra.conf import platform_settings
from mcp_platform.catalog_files.exporting import tenant_export
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Write a tenant's configuration (catalog, sources, rate limits, settings) as YAML; secrets by name only."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="The tenant's slug.")
        parser.add_argument("-o", "--output", default="-", help="The file to write (default: standard output).")
        parser.add_argument(
            "--base-url",
            default=None,
            help="The platform's public origin, for the line that points editors at the file's JSON Schema "
            "(default: MCP_PUBLIC_BASE_URL; without either the line is left out).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"there is no tenant {options['tenant']!r}")
        base_url = options["base_url"] or platform_settings.PUBLIC_BASE_URL or None
        text = tenant_export(tenant, base_url=base_url)
        if options["output"] == "-":
            self.stdout.write(text, ending="")
            return
        Path(options["output"]).write_text(text, encoding="utf-8")
        self.stderr.write(f"Wrote the configuration of {tenant.slug} to {options['output']}.")
