"""``manage.py load_bench_tenants``: the ``bench`` and ``bench-catalog`` tenants the benchmark drives (idempotent)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from tenants import services
from tenants.builtin.bench_fixtures import BENCH, CATALOG, CATALOG_TOOL_COUNT, catalog_tool, catalog_tool_name
from tenants.builtin.loading import catalog_load
from tenants.history.revisions import catalog_revision
from tenants.models import Tool

BATCH = 500


class Command(BaseCommand):
    help = "Create or update the benchmark tenants: 'bench' (three tools) and 'bench-catalog' (many tools)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--catalog-tools", type=int, default=CATALOG_TOOL_COUNT, help="Tools in bench-catalog.")

    def handle(self, *args: Any, **options: Any) -> None:
        catalog_load(BENCH)
        tenant, _ = catalog_load(CATALOG)
        wanted = options["catalog_tools"]
        present = set(Tool.objects.filter(tenant=tenant).values_list("name", flat=True))
        missing = [index for index in range(wanted) if catalog_tool_name(index) not in present]
        # Through the create service like any admin would, in batches so each commit's after-commit list stays short.
        for start in range(0, len(missing), BATCH):
            with catalog_revision(comment=f"Loaded benchmark catalog tools ({len(missing)})"):
                for index in missing[start : start + BATCH]:
                    services.tool_create(tenant=tenant, **catalog_tool(index))
            self.stdout.write(f"  {min(start + BATCH, len(missing))}/{len(missing)} catalog tools created")
        total = Tool.objects.filter(tenant=tenant).count()
        self.stdout.write(self.style.SUCCESS(f"Tenants 'bench' and {tenant.slug!r} ({total} tools) are ready."))
