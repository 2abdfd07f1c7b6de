"""``manage.py openapi_import <tenant> <url-or-file>``: an OpenAPI 3.0/3.1 document's operations as HTTP tools.

The tools are in the catalog when the command returns; on any error it changes nothing and says why.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync
from django.core.management.base import BaseCommand, CommandError

from tenants.bulk_changes import Actor
from tenants.models import ChangePolicy, Tenant
from tenants.openapi.document import OpenApiError, document_parse
from tenants.openapi.fetching import document_fetch_once, document_read
from tenants.openapi.importing import openapi_import
from tenants.openapi.servers import is_web_url
from tenants.openapi.translate import ImportOptions


class Command(BaseCommand):
    help = "Import an OpenAPI 3.0 or 3.1 document (URL or file) as HTTP tools of a tenant; again to update them."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("tenant", help="The tenant's slug.")
        parser.add_argument("location", help="The document's http(s) URL or a file path (JSON or YAML).")
        parser.add_argument("--prefix", default="", help="Put before every tool name, e.g. petstore_.")
        parser.add_argument("--base-url", default=None, help="Call the API here instead of the document's servers.")
        parser.add_argument("--secret", default=None, help="The tenant secret the tools authenticate with.")
        parser.add_argument("--client-id", default=None, help="OAuth 2.0 client credentials: the client id.")
        parser.add_argument("--name", default="", help="A label for the source (default: the document's title).")
        parser.add_argument(
            "--changes",
            default=None,
            choices=ChangePolicy.values,
            help="What a re-import does with its changes: accept (applied) or hold (each waits for an admin's "
            "approval in the admin). Default: as the source was set (accept for a new one).",
        )
        parser.add_argument(
            "--withhold-incompatible",
            default=None,
            action=argparse.BooleanOptionalAction,
            help="While a held change waits, withhold a tool whose new input schema is incompatible.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant {options['tenant']!r}.")
        location: str = options["location"]
        try:
            if is_web_url(location):
                content = async_to_sync(document_fetch_once)(location, tenant_id=tenant.pk)
            else:
                location = str(Path(location).resolve())
                content = document_read(location)
            document = document_parse(content, location=location)
            report = openapi_import(
                tenant=tenant,
                document=document,
                name=options["name"],
                options=ImportOptions(
                    prefix=options["prefix"],
                    base_url=options["base_url"],
                    secret_name=options["secret"],
                    client_id=options["client_id"],
                ),
                actor=Actor("manage.py openapi_import"),
                change_policy=options["changes"],
                withhold_incompatible=options["withhold_incompatible"],
            )
        except OpenApiError as exc:
            raise CommandError(f"Nothing was imported: {exc}") from None
        for key, reason in report.skipped:
            self.stdout.write(f"  skipped {key}: {reason}")
        if report.held:
            self.stdout.write(f"  held for review in the admin: {', '.join(report.held)}")
        for warning in report.warnings:
            self.stdout.write(self.style.WARNING(f"  {warning}"))
        self.stdout.write(self.style.SUCCESS(report.summary()))
