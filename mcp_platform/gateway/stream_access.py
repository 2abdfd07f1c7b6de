"""Whether the caller of an open stream may still hear it, asked again while the stream lives.

The middleware checks a request once, when it arrives; a stream outlives that check. Before each event and at
each keep-alive a stream asks ``StreamAccess.allowed``: the tenant must still be servable (suspension), and on a
tenant that requires authorization the token that opened the stream must still be valid (revoked, expired, the
member removed or deactivated). A stream no longer allowed ends; the client reconnects and meets the middleware.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp_platform.gateway.middleware import TENANT_SCOPE_KEY
from mcp_platform.oauth import resource
from tenants.cache import tenant_cache
from tenants.models import Tenant

logger = logging.getLogger(__name__)


class StreamAccess:
    """The tenant and principal a stream was opened for, checked again on demand."""

    def __init__(self, *, tenant: Tenant, principal: resource.Principal | None) -> None:
        self._tenant = tenant
        self._principal = principal

    @classmethod
    def of(cls, scope: dict[str, Any]) -> StreamAccess:
        """For the request in an ASGI ``scope`` that passed the gateway middleware."""
        principal = scope.get(resource.PRINCIPAL_SCOPE_KEY)
        return cls(
            tenant=scope[TENANT_SCOPE_KEY],
            principal=principal if isinstance(principal, resource.Principal) else None,
        )

    async def allowed(self) -> bool:
        """True while the stream's caller may still use the tenant's endpoint. Fails closed: when the check
        itself fails (the database is unreachable), the stream ends and the client's reconnection decides."""
        try:
            tenant = await tenant_cache.servable(self._tenant.slug)
            if tenant is None or tenant.pk != self._tenant.pk:
                return False
            if not tenant.requires_authorization:
                return True
            if self._principal is None:
                return False  # the tenant started to require authorization after the stream opened
            return await resource.astill_authorized(tenant=tenant, principal=self._principal)
        except Exception:
            logger.warning("could not check access of a stream of tenant %s; ending it", self._tenant.pk, exc_info=True)
            return False
