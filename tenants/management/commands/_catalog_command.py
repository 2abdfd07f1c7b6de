"""The shared body of the commands that load a built-in catalog."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants.builtin.loading import CatalogSpec, catalog_load
from tenants.models import Tenant
from tenants.services import UpsertOutcome


class CatalogLoadCommand(BaseCommand):
    """Store ``spec`` through the services and print a summary, with the entries a reload changed."""

    spec: CatalogSpec

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--if-missing",
            action="store_true",
            help="Load the tenant only when it does not exist yet, leaving edits made in the admin as they are.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["if_missing"] and Tenant.objects.filter(slug=self.spec.slug).exists():
            self.stdout.write(
                f"Tenant {self.spec.slug!r} (/t/{self.spec.slug}/mcp) exists: left as it is "
                "(without --if-missing the command reloads it)."
            )
            return
        try:
            tenant, steps = catalog_load(self.spec)
        except ValidationError as exc:
            raise CommandError(f"the {self.spec.slug} catalog is invalid: {exc}") from exc
        # One summary line on a first load; a reload also names what it changed back (-v 2: every entry).
        verbose = options["verbosity"] > 1
        for step in steps:
            if verbose or step.outcome not in (UpsertOutcome.CREATED, UpsertOutcome.UNCHANGED):
                self.stdout.write(str(step))
        counts = {outcome: sum(1 for s in steps if s.outcome == outcome) for outcome in UpsertOutcome}
        summary = ", ".join(f"{count} {outcome}" for outcome, count in counts.items())
        self.stdout.write(self.style.SUCCESS(f"Tenant {tenant.slug!r} (/t/{tenant.slug}/mcp): {summary}."))
