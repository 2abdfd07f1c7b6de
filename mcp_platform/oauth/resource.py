"""Each tenant endpoint as an OAuth protected resource: its URL, its metadata URL, and bearer-token checks.

RFC 6750 (Bearer, header only), RFC 8707 (the token's one audience is this endpoint, or for the 2024-11-05
transport another endpoint of the same tenant: ``accepted_audiences``) and RFC 9728 (``WWW-Authenticate``
points at the endpoint's metadata). Used by the gateway's ASGI middleware, so the
check is async and costs one query (plus a "last used" write at most once a minute per token).
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone
from oauth2_provider.models import AbstractApplication, get_access_token_model, get_refresh_token_model
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.www_authenticate import build_bearer_challenge

from mcp_infra.addresses import DEFAULT_SERVER, MCP, accepted_audiences, metadata_url
from mcp_platform.oauth.scopes import SCOPES, ordered
from tenants.connections.acting import Caller
from tenants.models import Tenant

# "Last used" on the connected-apps page is kept to this resolution: at most one write per token per minute.
LAST_USED_RESOLUTION = timedelta(minutes=1)
PRINCIPAL_SCOPE_KEY = "mcp.principal"
# Whom a request on a tenant without authorization acts for: everyone alike.
ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class Principal:
    """Who is calling: a person through a client, or a machine client on its own; allowed to do what."""

    user_id: int | None  # None: a machine client (client credentials) acting for itself
    client_id: str
    scopes: frozenset[str]
    token_id: int


@dataclass(frozen=True)
class Challenge:
    """A refusal: the HTTP status and the ``WWW-Authenticate`` value to send."""

    status: int
    www_authenticate: str


def challenge(
    *,
    base_url: str,
    slug: str,
    endpoint: str = MCP,
    server: str = DEFAULT_SERVER,
    error: str | None = None,
    description: str | None = None,
    scopes: tuple[str, ...] | frozenset[str] = SCOPES,
) -> Challenge:
    """401 without a usable token; 403 with ``insufficient_scope``. ``scope`` lists what the request needs;
    ``resource_metadata`` the metadata of the ``endpoint`` (of the tenant's server ``server``) the request went
    to."""
    details: dict[str, str] = {}
    if error:
        details["error"] = error
    if description:
        details["error_description"] = description
    metadata = metadata_url(base_url, slug, endpoint, server)
    value = build_bearer_challenge(None, details or None, resource_metadata_url=metadata)
    value += f',scope="{" ".join(ordered(scopes))}"'
    return Challenge(403 if error == "insufficient_scope" else 401, value)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme case-insensitive), else None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token


def _holder_allowed(tenant: Tenant) -> Q:
    """Tokens whose holder may use ``tenant``: an active member through any client, or a machine client bound
    to it by client credentials."""
    person = Q(user__is_active=True, user__tenant_memberships__tenant=tenant)
    machine = Q(
        user__isnull=True,
        application__tenant=tenant,
        application__authorization_grant_type=AbstractApplication.GRANT_CLIENT_CREDENTIALS,
    )
    return person | machine


@dataclass(frozen=True)
class Standing:
    """What one look at a stream's token found: whether it still passes now, and the refresh-token family (the
    grant) it was issued in, if any."""

    valid: bool
    family: uuid.UUID | None


async def atoken_standing(*, tenant: Tenant, principal: Principal) -> Standing:
    """Whether the token a request was authenticated with still passes the checks of ``aauthenticate`` that can
    change after the fact (not revoked, not expired, its user still active and a member), and its grant; one
    query. Open streams ask this before each event and at each keep-alive."""
    row = (
        await get_access_token_model()
        .objects.filter(_holder_allowed(tenant), pk=principal.token_id)
        .values_list("expires", "refresh_token__token_family")
        .afirst()
    )
    if row is None:
        return Standing(valid=False, family=None)
    expires, family = row
    return Standing(valid=expires > timezone.now(), family=family)


async def agrant_alive(*, tenant: Tenant, family: uuid.UUID) -> bool:
    """Whether the grant a token was issued in still gives its holder access to ``tenant``: a refresh token of
    the family is neither revoked (by rotation, reuse protection or the connected-apps page) nor expired, and its
    user is still an active member. One query."""
    live = get_refresh_token_model().objects.filter(
        token_family=family,
        revoked__isnull=True,
        user__is_active=True,
        user__tenant_memberships__tenant=tenant,
    )
    lifetime = oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS
    if lifetime is not None:
        live = live.filter(created__gt=timezone.now() - timedelta(seconds=lifetime))
    return await live.aexists()


async def aauthenticate(
    *,
    tenant: Tenant,
    authorization: str | None,
    base_url: str,
    endpoint: str = MCP,
    server: str = DEFAULT_SERVER,
    scopes: tuple[str, ...] | frozenset[str] = SCOPES,
) -> Principal | Challenge:
    """Check the bearer token of a request to ``endpoint`` of ``tenant``'s server ``server`` ("" the default one)
    in one query.

    Valid means: known, not expired, its one audience is one ``accepted_audiences`` lists (so a token for one of
    the tenant's servers is no token for another, nor for its default server), and either its user
    is active and still a member of the tenant (through a client allowed for this tenant), or it has no user and
    was issued by client credentials to a machine client bound to this tenant. Anything else is ``invalid_token``
    (a missing token gets a challenge without an error code, RFC 6750 §3.1). A used token's ``updated`` is moved
    forward (to the minute): it is the "last used" of the connected-apps page. A challenge names ``scopes``.
    """
    token = bearer_token(authorization)
    if token is None:
        return challenge(base_url=base_url, slug=tenant.slug, endpoint=endpoint, server=server, scopes=scopes)
    checksum = hashlib.sha256(token.encode()).hexdigest()
    row = (
        await get_access_token_model()
        .objects.filter(_holder_allowed(tenant), token_checksum=checksum, expires__gt=timezone.now())
        .select_related("application")
        .only("id", "user_id", "scope", "resource", "updated", "application__client_id", "application__tenant_id")
        .afirst()
    )
    audiences = accepted_audiences(base_url, tenant.slug, endpoint, server)
    if (
        row is None
        or row.application is None
        or not (isinstance(row.resource, list) and len(row.resource) == 1 and row.resource[0] in audiences)
        or row.application.tenant_id not in (None, tenant.pk)
    ):
        return challenge(
            base_url=base_url,
            slug=tenant.slug,
            endpoint=endpoint,
            server=server,
            scopes=scopes,
            error="invalid_token",
            description="The access token is invalid, expired, or not for this endpoint.",
        )
    now = timezone.now()
    if row.updated < now - LAST_USED_RESOLUTION:
        await type(row).objects.filter(pk=row.pk).aupdate(updated=now)
    return Principal(
        user_id=row.user_id,
        client_id=row.application.client_id,
        scopes=frozenset(row.scope.split()),
        token_id=row.pk,
    )


def principal_label(scope: dict[str, Any]) -> str:
    """Whom the request in an ASGI ``scope`` acts for, as tasks and sealed request states record it: the bearer
    token's subject, one user acting through one client (``user:<id> client:<id>``; a refreshed token keeps it,
    another user or the same user through another app does not), a machine client acting for itself
    (``client:<id>``), or ``anonymous`` on a public tenant."""
    principal = scope.get(PRINCIPAL_SCOPE_KEY)
    if not isinstance(principal, Principal):
        return ANONYMOUS
    if principal.user_id is None:
        return f"client:{principal.client_id}"
    return f"user:{principal.user_id} client:{principal.client_id}"


def request_caller(scope: dict[str, Any], *, base_url: str) -> Caller:
    """Whom the request in an ASGI ``scope`` acts for (``principal_label``), reached at ``base_url``, with the row
    of the access token it carried (a token exchange during the request starts from it; the token itself never
    leaves the gateway middleware)."""
    caller = Caller.from_label(principal_label(scope), base_url=base_url)
    principal = scope.get(PRINCIPAL_SCOPE_KEY)
    if caller.user_id is None or not isinstance(principal, Principal):
        return caller
    return dataclasses.replace(caller, token_id=principal.token_id)
