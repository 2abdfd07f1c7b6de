"""``manage.py load_demo_tenant``: create or update the ``demo`` tenant and its catalog (idempotent)."""

from __future__ import annotations

from tenants.builtin.demo_fixtures import DEMO
from tenants.management.commands._catalog_command import CatalogLoadCommand


class Command(CatalogLoadCommand):
    help = "Create or update the 'demo' tenant with a few tools, a resource, a template and a prompt."
    spec = DEMO
