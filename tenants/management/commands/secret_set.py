"""``manage.py secret_set <tenant> <name>``: store a tenant secret whose value is read from standard input.

The value never appears on the command line (shell history, ``ps``) or in the command's output.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants.models import Tenant
from tenants.secrets import secret_set


class Command(BaseCommand):
    help = "Store a tenant secret, its value read from standard input (one trailing newline is dropped)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="The tenant's slug.")
        parser.add_argument("name", help="The secret's name, as HTTP tools and upstreams refer to it.")

    def handle(self, *args: Any, tenant: str, name: str, **options: Any) -> None:
        owner = Tenant.objects.filter(slug=tenant).first()
        if owner is None:
            raise CommandError(f"No tenant {tenant!r}.")
        value = sys.stdin.read()
        # What `echo value | ...` or a heredoc adds; a value that needs a newline at its end keeps the others.
        value = value.removesuffix("\n").removesuffix("\r")
        try:
            secret_set(tenant=owner, name=name, value=value)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stdout.write(f"Stored secret {name!r} of tenant {tenant!r}.")
