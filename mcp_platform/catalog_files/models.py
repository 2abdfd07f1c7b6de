"""Which of a tenant's objects a configuration file manages: those it made or took over, by section and key. An
apply removes the managed objects the file no longer lists and leaves every other object of the tenant alone."""

from __future__ import annotations

from django.db import models

from tenants.models import Tenant


class ManagedObject(models.Model):
    """One object a configuration file made or took over: its section in the file (``tools``, ``rate_limits``, ...)
    and its key there (a name, a URI, a location, ``tool:search`` for a limit). Kept by key, not by row: an object
    renamed by hand is no longer the file's, and one deleted by hand is made again by the next apply."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    section = models.CharField(max_length=32)
    key = models.TextField()
    managed_since = models.DateTimeField(auto_now_add=True)

    class Meta:
        # An apply replaces a tenant's set as a whole, under the tenant row's lock: no unique index over keys as
        # long as a resource's URI is needed.
        indexes = [models.Index(fields=["tenant", "section"], name="catalog_files_managed_tenant")]

    def __str__(self) -> str:
        return f"{self.section} {self.key}"
