"""``manage.py load_conformance_tenant``: create or update the public ``conformance`` tenant (idempotent)."""

from __future__ import annotations

from tenants.builtin.conformance_fixtures import CONFORMANCE
from tenants.management.commands._catalog_command import CatalogLoadCommand


class Command(CatalogLoadCommand):
    help = "Create or update the 'conformance' tenant with every fixture of the MCP conformance suite."
    spec = CONFORMANCE
