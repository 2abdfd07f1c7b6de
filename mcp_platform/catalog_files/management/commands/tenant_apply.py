"""``manage.py tenant_apply <file> [--plan] [--tenant SLUG]``: show what a configuration file changes in a tenant,
then (without ``--plan``) make those changes in one transaction. Bad input changes nothing and is reported by line.

In CI: ``tenant_apply --plan`` on a pull request, ``tenant_apply`` once it is merged (docs/configuration-as-code.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_platform.catalog_files.applying import PlanChanged, configuration_apply, file_label
from mcp_platform.catalog_files.loading import MAX_BYTES, ConfigFileError, Problem, size_check
from mcp_platform.catalog_files.planning import configuration_plan, file_check
from tenants.bulk_changes import Actor
from tenants.models import Tenant


def _read(path: str) -> bytes:
    """The file's bytes (``-``: standard input), read no further than the size limit. Raises ``ConfigFileError``."""
    if path == "-":
        content = sys.stdin.buffer.read(MAX_BYTES + 1)
        if len(content) > MAX_BYTES:
            raise ConfigFileError([Problem(None, (), f"the input is more than {MAX_BYTES:,} bytes, the limit")])
        return content
    file = Path(path)
    try:
        size_check(file.stat().st_size)
        return file.read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None


class Command(BaseCommand):
    help = (
        "Show the changes a tenant configuration file makes (--plan), or make them in one transaction: objects the "
        "file made and no longer lists are removed, objects it never named are left alone."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The configuration file (YAML), or - for standard input.")
        parser.add_argument("--plan", action="store_true", help="Show the changes and change nothing.")
        parser.add_argument("--tenant", default=None, help="Apply to this tenant instead of the file's.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            loaded = file_check(_read(options["file"]))
            slug = options["tenant"] or loaded.data.get("tenant")
            if not slug:
                raise CommandError("the file names no tenant: add `tenant: <slug>` or pass --tenant")
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is None:
                raise CommandError(f"there is no tenant {slug!r}")
            if options["plan"]:
                proposal = configuration_plan(tenant=tenant, loaded=loaded, files_allowed=True)
                self.stdout.write("\n".join(proposal.plan.lines()))
                return
            report = configuration_apply(
                tenant=tenant,
                loaded=loaded,
                actor=Actor("manage.py tenant_apply"),
                source=file_label(options["file"]),
                files_allowed=True,
            )
        except ConfigFileError as exc:
            raise CommandError(f"{options['file']} cannot be applied; nothing was changed:\n{exc}") from None
        except PlanChanged as exc:
            raise CommandError(f"nothing was changed: {exc}") from None
        self.stdout.write("\n".join(report.proposal.plan.lines()))
        for note in report.notes:
            self.stdout.write(self.style.WARNING(f"  {note}"))
        done = "Applied." if not report.proposal.plan.empty else "Nothing to apply."
        self.stdout.write(self.style.SUCCESS(done))
