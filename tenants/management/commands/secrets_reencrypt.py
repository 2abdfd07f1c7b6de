"""``manage.py secrets_reencrypt``: re-encrypt every tenant secret, and people's own tokens and keys, under the first
of MCP_SECRET_KEYS.

Run after putting a new key first; the old key can leave MCP_SECRET_KEYS once this has finished.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from tenants.connections.services import personal_reencrypt
from tenants.secrets import SecretUnreadable, secrets_reencrypt


class Command(BaseCommand):
    help = "Re-encrypt every tenant secret under the first key of MCP_SECRET_KEYS (after a key rotation)."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            moved, current = secrets_reencrypt()
            personal = personal_reencrypt()
        except SecretUnreadable as exc:
            raise CommandError(f"{exc}; secrets before it were re-encrypted, run again once it is fixed") from None
        self.stdout.write(f"Re-encrypted {moved} secret(s); {current} secret(s) are under the current key.")
        self.stdout.write(f"Re-encrypted {personal} of people's own tokens and keys.")
