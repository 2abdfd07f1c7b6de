"""``manage.py upstream_add <tenant> <name> <url>``: attach an upstream MCP server and mirror its catalog."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants.bulk_changes import Actor
from tenants.federation.connection import UpstreamFailure
from tenants.federation.services import upstream_add
from tenants.models import ChangePolicy, Tenant, Upstream


class Command(BaseCommand):
    help = (
        "Add an upstream MCP server to a tenant: connect, discover its tools, resources, templates and prompts and "
        "serve them under a prefix. Returns once they are in the catalog; on failure nothing is stored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="The tenant's slug.")
        parser.add_argument("name", help="A name for the upstream (letters, digits, _ and -).")
        parser.add_argument("url", help="The upstream's MCP endpoint (Streamable HTTP, or a 2024-11-05 /sse URL).")
        parser.add_argument("--prefix", default=None, help="Prepended to its item names (default: <name>_).")
        parser.add_argument("--bearer-secret", default=None, help="A tenant secret sent as the bearer token.")
        parser.add_argument(
            "--session-mode",
            default=Upstream.SessionMode.AUTO,
            choices=Upstream.SessionMode.values,
            help="auto (2026-07-28, and a handshake session for the tools found to ask imperatively), stateless "
            "(never a session) or session (a handshake session for everything).",
        )
        parser.add_argument(
            "--changes",
            default=ChangePolicy.ACCEPT,
            choices=ChangePolicy.values,
            help="accept (its tools' later changes are mirrored at once) or hold (each waits for an admin's approval; "
            "what it offers now is approved by adding it).",
        )
        parser.add_argument(
            "--withhold-incompatible",
            action="store_true",
            help="With --changes hold: withhold a tool whose new input schema is incompatible until it is decided.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"there is no tenant {options['tenant']!r}")
        secret = options["bearer_secret"]
        auth = {"type": "bearer", "secret": secret} if secret else None
        try:
            upstream, report = upstream_add(
                tenant=tenant,
                name=options["name"],
                url=options["url"],
                prefix=options["prefix"],
                auth=auth,
                actor=Actor("manage.py upstream_add"),
                session_mode=options["session_mode"],
                change_policy=options["changes"],
                withhold_incompatible=options["withhold_incompatible"],
            )
        except ValidationError as exc:
            raise CommandError(f"upstream {options['name']!r} was not added: {' '.join(exc.messages)}") from None
        except UpstreamFailure as exc:
            raise CommandError(f"upstream {options['name']!r} was not added: {exc}") from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Upstream {upstream.name!r} of tenant {tenant.slug!r} ({upstream.transport}, "
                f"{upstream.protocol_version}): {report}."
            )
        )
