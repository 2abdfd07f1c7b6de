"""Whether the caller of an open stream may still hear it, asked again while the stream lives.

The middleware checks a request once, when it arrives; a stream outlives that check. Before each event and at
each keep-alive a stream asks ``StreamAccess.allowed``: the tenant must still be servable (suspension), so must
the named server the stream is on (disabled, deleted), and on a tenant that requires authorization the caller
must still hold the grant the stream was opened with. A stream no longer allowed ends; the client reconnects and
meets the middleware.

The grant, not the one access token: an access token expires (an hour) long before a client is done with its
stream, and a client renews it on its next request (a refresh, or a new authorization after a 401) while the
stream, opened with the old one, stays open. So a stream lives while its token is valid and, after that, while a
refresh token of the token's family is live: a rotation keeps the family, and revoking the client's access
(connected apps, reuse protection), removing the member or deactivating the user ends it. A machine client's
token (client credentials, no refresh token) holds its stream only until it expires.
The family is learnt at the stream's first check (its first event or keep-alive); a client that rotates its
token before then has its stream ended, and reconnects.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from mcp_platform.gateway.middleware import SERVER_SCOPE_KEY, TENANT_SCOPE_KEY
from mcp_platform.oauth import resource
from tenants.cache import tenant_cache
from tenants.models import Server, Tenant

logger = logging.getLogger(__name__)


class StreamAccess:
    """The tenant (and named server) and principal a stream was opened for, checked again on demand."""

    def __init__(self, *, tenant: Tenant, principal: resource.Principal | None, server: Server | None = None) -> None:
        self._tenant = tenant
        self._server_slug = server.slug if server is not None else ""
        self._principal = principal
        # The refresh-token family of the stream's token, remembered from a look while the token existed: a
        # rotation deletes the old access token, and the family is how the stream then finds its grant.
        self._family: uuid.UUID | None = None

    @classmethod
    def of(cls, scope: dict[str, Any]) -> StreamAccess:
        """For the request in an ASGI ``scope`` that passed the gateway middleware."""
        principal = scope.get(resource.PRINCIPAL_SCOPE_KEY)
        return cls(
            tenant=scope[TENANT_SCOPE_KEY],
            principal=principal if isinstance(principal, resource.Principal) else None,
            server=scope.get(SERVER_SCOPE_KEY),
        )

    async def allowed(self) -> bool:
        """True while the stream's caller may still use the tenant's endpoint. Fails closed: when the check
        itself fails (the database is unreachable), the stream ends and the client's reconnection decides."""
        try:
            tenant = await tenant_cache.servable(self._tenant.slug)
            if tenant is None or tenant.pk != self._tenant.pk:
                return False
            if self._server_slug and await tenant_cache.server(tenant, self._server_slug) is None:
                return False
            if not tenant.requires_authorization:
                return True
            if self._principal is None:
                return False  # the tenant started to require authorization after the stream opened
            standing = await resource.atoken_standing(tenant=tenant, principal=self._principal)
            self._family = standing.family or self._family
            if standing.valid:
                return True
            return self._family is not None and await resource.agrant_alive(tenant=tenant, family=self._family)
        except Exception:
            logger.warning("could not check access of a stream of tenant %s; ending it", self._tenant.pk, exc_info=True)
            return False
