"""Which tenant a revision changed: what scopes the history pages (a deleted row's versions are found through it)
and what goes with the tenant when it is deleted. Reversion's own tables hold the revisions and versions."""

from __future__ import annotations

from django.db import models
from reversion.models import Revision

from tenants.models import Tenant


class RevisionTenant(models.Model):
    """One tenant a revision changed (reversion's "revision meta"): nearly always one per revision."""

    revision = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="tenant_links")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["revision", "tenant"], name="catalog_history_revision_tenant_unique")
        ]

    def __str__(self) -> str:
        return f"revision {self.revision_id} of tenant {self.tenant_id}"
