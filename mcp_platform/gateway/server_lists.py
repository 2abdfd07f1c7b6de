"""What the open stream of a tenant's named server passes on of the tenant's catalog changes: a change of a list only
when the server's own list changed, and a resource's update only for a resource the server serves.

Catalog changes name the tenant and the kind of list, not the items, and a change to the server itself (its
selection) is announced as a change of every list. So the stream keeps a digest of each of its server's lists as
it last told its client about them (``ServerCatalog.list_digest``, memoised per revision of the tenant: the many
streams of a server read each list once per change) and compares it with the digest of the new revision.
"""

from __future__ import annotations

from tenants.cache import tenant_cache
from tenants.catalog import ServerCatalog
from tenants.events import CATALOG_KINDS
from tenants.models import Server, Tenant


class ServerLists:
    """The lists of one named server, as a stream's client last heard of them."""

    def __init__(self, *, tenant_slug: str, tenant_id: int, server_slug: str) -> None:
        self._tenant_slug = tenant_slug
        self._tenant_id = tenant_id
        self._server_slug = server_slug
        self._digests: dict[str, str] = {}

    @classmethod
    def of(cls, tenant: Tenant, server: Server | None) -> ServerLists | None:
        """For a stream to ``server`` of ``tenant``; None for the tenant's default server, whose streams pass every
        change on."""
        if server is None:
            return None
        return cls(tenant_slug=tenant.slug, tenant_id=tenant.pk, server_slug=server.slug)

    async def _catalog(self) -> ServerCatalog | None:
        """The server's catalog as of the tenant's current revision (None once the tenant or server is gone: the
        stream's access check ends the stream)."""
        tenant = await tenant_cache.servable(self._tenant_slug)
        if tenant is None or tenant.pk != self._tenant_id:
            return None
        server = await tenant_cache.server(tenant, self._server_slug)
        if server is None:
            return None
        catalog = tenant_cache.catalog(tenant, None, server)
        assert isinstance(catalog, ServerCatalog)
        return catalog

    async def start(self) -> None:
        """Take the lists as they are when the stream opens (after it joined the tenant's catalog group, so a change
        committed from now on is compared with these)."""
        catalog = await self._catalog()
        if catalog is not None:
            self._digests = {kind: await catalog.list_digest(kind) for kind in CATALOG_KINDS}

    async def changed(self, kind: str) -> bool:
        """Whether the server's list of ``kind`` changed since the stream last said so (or opened); remembers the
        new list as said."""
        catalog = await self._catalog()
        if catalog is None or kind not in CATALOG_KINDS:
            return False
        digest = await catalog.list_digest(kind)
        if self._digests.get(kind) == digest:
            return False
        self._digests[kind] = digest
        return True

    async def serves_resource(self, uri: str) -> bool:
        catalog = await self._catalog()
        return catalog is not None and await catalog.serves_resource(uri)
