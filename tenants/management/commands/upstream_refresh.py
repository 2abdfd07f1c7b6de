"""``manage.py upstream_refresh <tenant> [<name>]``: re-read upstream catalogs now."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants.bulk_changes import Actor
from tenants.federation.connection import UpstreamFailure
from tenants.federation.services import upstream_refresh
from tenants.models import Upstream


class Command(BaseCommand):
    help = "Re-read the catalogs of a tenant's upstream MCP servers (all, or the one named) and mirror them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="The tenant's slug.")
        parser.add_argument("name", nargs="?", default=None, help="Only this upstream.")

    def handle(self, *args: Any, **options: Any) -> None:
        upstreams = Upstream.objects.filter(tenant__slug=options["tenant"], enabled=True)
        if options["name"]:
            upstreams = upstreams.filter(name=options["name"])
        if not upstreams.exists():
            raise CommandError(f"tenant {options['tenant']!r} has no such enabled upstream")
        failed = False
        for upstream in upstreams:
            try:
                report = async_to_sync(upstream_refresh)(
                    upstream.pk, pooled=False, actor=Actor("manage.py upstream_refresh")
                )
            except (UpstreamFailure, ValidationError) as exc:
                failed = True
                message = str(exc) if isinstance(exc, UpstreamFailure) else " ".join(exc.messages)
                self.stderr.write(f"{upstream.name}: {message}")
                continue
            self.stdout.write(f"{upstream.name}: {report}")
        if failed:
            raise CommandError("some upstreams could not be refreshed")
