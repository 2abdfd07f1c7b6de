"""The shared body of the commands that load a built-in catalog."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from tenants.builtin.loading import CatalogSpec, catalog_load
from tenants.services import UpsertOutcome


class CatalogLoadCommand(BaseCommand):
    """Store ``spec`` through the services and print what each entry went through."""

    spec: CatalogSpec

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            tenant, steps = catalog_load(self.spec)
        except ValidationError as exc:
            raise CommandError(f"the {self.spec.slug} catalog is invalid: {exc}") from exc
        verbose = options["verbosity"] > 1
        for step in steps:
            if verbose or step.outcome != UpsertOutcome.UNCHANGED:
                self.stdout.write(str(step))
        counts = {outcome: sum(1 for s in steps if s.outcome == outcome) for outcome in UpsertOutcome}
        summary = ", ".join(f"{count} {outcome}" for outcome, count in counts.items())
        self.stdout.write(self.style.SUCCESS(f"Tenant {tenant.slug!r} (/t/{tenant.slug}/mcp): {summary}."))
