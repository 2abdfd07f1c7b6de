"""``manage.py catalog_history_start``: a first version of every row the history keeps and has no version of yet
(rows made before the history existed, or by a raw write), one revision per tenant. Idempotent: run it once after
upgrading, and a restore can then go back to how things were before the first change."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from reversion.models import Version

from tenants.history.revisions import catalog_revision, history_record
from tenants.history.versioned import versioned_entry, versioned_models
from tenants.models import Tenant

COMMENT = "The state when the history began (manage.py catalog_history_start)"


class Command(BaseCommand):
    help = "Keep a first version of every row of the catalog's history that has none yet, one revision per tenant."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slugs", nargs="*", help="Only these tenants (all by default).")

    def handle(self, *args: Any, **options: Any) -> None:
        tenants = Tenant.objects.order_by("slug")
        if options["slugs"]:
            tenants = tenants.filter(slug__in=options["slugs"])
        total = 0
        for tenant in tenants:
            recorded = 0
            with catalog_revision(comment=COMMENT):
                for model in versioned_models():
                    entry = versioned_entry(model)
                    assert entry is not None
                    rows = model._default_manager.filter(**{entry.tenant_field or "pk": tenant.pk}).order_by("pk")
                    kept = set(Version.objects.get_for_model(model).values_list("object_id", flat=True))
                    for row in rows:
                        if str(row.pk) not in kept and entry.keep(row):
                            history_record(row)
                            recorded += 1
            if recorded:
                self.stdout.write(f"{tenant.slug}: {recorded} first version(s)")
            total += recorded
        self.stdout.write(self.style.SUCCESS(f"{total} row(s) given a first version."))
