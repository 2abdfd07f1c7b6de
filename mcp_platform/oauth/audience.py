"""RFC 8707 at the authorization server: which tenant endpoint a grant is for, and who may get one.

A grant names exactly one tenant endpoint (``/mcp``, or ``/sse`` or ``/messages`` for the 2024-11-05 transport) of
the tenant's default server or of one of its enabled named servers (``/t/<tenant>/s/<server>/mcp``: each is a
protected resource of its own); it is issued only to a member of that tenant, and only to a client allowed for it
(unbound, or bound to that tenant).
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from mcp_infra.addresses import address_of, endpoint_url
from mcp_platform.oauth.models import TenantApplication
from tenants.models import Server, Tenant
from tenants.selectors import membership_get, server_get_servable, tenant_get_servable


class AudienceRefused(Exception):
    """The requested resource cannot be granted; ``error`` is the OAuth error code to report."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def resource_target(resource: str, base_url: str) -> tuple[Tenant, Server | None] | None:
    """The servable tenant, and its enabled named server (None: the default one), whose endpoint ``resource`` is:
    exactly that endpoint's URL at ``base_url``; None for anything else."""
    address = address_of(resource)
    tenant = tenant_get_servable(slug=address.tenant) if address is not None else None
    if address is None or tenant is None:
        return None
    if resource != endpoint_url(base_url, tenant.slug, address.endpoint, address.server):
        return None
    if not address.server:
        return tenant, None
    server = server_get_servable(tenant=tenant, slug=address.server)
    return (tenant, server) if server is not None else None


def grant_tenant(
    *,
    resources: list[str],
    base_url: str,
    application: TenantApplication,
    user: AbstractBaseUser | AnonymousUser,
) -> Tenant:
    """The tenant whose endpoint ``resources`` names, checked for ``application`` and ``user``.

    Raises ``AudienceRefused`` (``invalid_target`` for a missing, multiple or unknown resource,
    ``access_denied`` when the user is not a member or the client is bound to another tenant).
    """
    if len(resources) != 1:
        raise AudienceRefused("invalid_target", "Name exactly one MCP endpoint in the resource parameter (RFC 8707).")
    resource = resources[0]
    # The exact endpoint URL, origin included, of a servable tenant (and an enabled server of it).
    target = resource_target(resource, base_url)
    if target is None:
        raise AudienceRefused("invalid_target", f"{resource} is not an MCP endpoint of this platform.")
    tenant = target[0]
    if application.tenant_id not in (None, tenant.pk):
        raise AudienceRefused("access_denied", f"This client may not be used with {tenant.name}.")
    if not user.is_authenticated or membership_get(tenant=tenant, user=user) is None:  # type: ignore[arg-type]
        raise AudienceRefused("access_denied", f"Your account is not a member of {tenant.name}.")
    return tenant
