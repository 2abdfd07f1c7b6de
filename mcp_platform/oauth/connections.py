"""A person's connected apps: which client may act for them on which tenant endpoint (selector), and ending that.

A connection is one client and one tenant endpoint (every grant names exactly one, RFC 8707) for which the
person holds a usable token: an unexpired access token, or a refresh token that could still mint one. Tokens other
clients obtained from it by token exchange (RFC 8693) are part of it: not listed apart, revoked with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Min, Model, Q
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_grant_model,
    get_refresh_token_model,
    refresh_token_expire_timedelta,
)
from oauth2_provider.scopes import get_scopes_backend

from mcp_infra.addresses import tenant_slug_of
from mcp_platform.oauth.models import TenantApplication
from mcp_platform.oauth.presentation import ClientFace, client_face
from tenants.models import Tenant
from tenants.selectors import tenants_by_slug

M = TypeVar("M", bound=Model)


@dataclass
class Connection:
    """One client's access to one tenant endpoint on behalf of one person."""

    application: TenantApplication
    resource: str
    tenant: Tenant | None = None
    scopes: set[str] = field(default_factory=set)
    # The granted scopes in words, in the order ``settings.OAUTH2_PROVIDER["SCOPES"]`` lists them.
    scope_descriptions: list[str] = field(default_factory=list)
    authorized_at: datetime | None = None
    last_used_at: datetime | None = None

    @cached_property
    def face(self) -> ClientFace:
        return client_face(self.application)


def _described(scopes: set[str], words: dict[str, str]) -> list[str]:
    known = [words[scope] for scope in words if scope in scopes]
    return known + sorted(scope for scope in scopes if scope not in words)


def _one_resource(value: object) -> str:
    return value[0] if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str) else ""


def connection_list(*, user: AbstractBaseUser) -> list[Connection]:
    """The person's connections, by app name then tenant.

    ``authorized_at`` is when the person allowed it (the first refresh token of the grant's rotation
    family, else the access token); ``last_used_at`` is the latest token issue or authenticated request
    (recorded to the minute by ``resource.aauthenticate``).
    """
    now = timezone.now()
    # A refresh token is usable while unrevoked and its access token expired less than the refresh lifetime
    # ago (how django-oauth-toolkit validates it).
    refreshable = Q(refresh_token__isnull=False, refresh_token__revoked__isnull=True)
    expire_delta = refresh_token_expire_timedelta()
    if expire_delta:
        refreshable &= Q(expires__gt=now - expire_delta)
    usable = Q(expires__gt=now) | refreshable
    tokens = (
        get_access_token_model()
        .objects.filter(usable, user=user, application__isnull=False, exchange__isnull=True)
        .select_related("application__tenant", "refresh_token")
    )
    found: dict[tuple[int, str], Connection] = {}
    families: dict[object, Connection] = {}
    for token in tokens:
        resource = _one_resource(token.resource)
        if not resource:
            continue
        connection = found.setdefault((token.application_id, resource), Connection(token.application, resource))
        connection.scopes.update(token.scope.split())
        connection.last_used_at = max(filter(None, (connection.last_used_at, token.updated)))
        refresh = getattr(token, "refresh_token", None)
        if refresh is not None and refresh.token_family:
            families[refresh.token_family] = connection
        else:
            connection.authorized_at = min(filter(None, (connection.authorized_at, token.created)))
    first_issued = (
        get_refresh_token_model()
        .objects.filter(token_family__in=list(families))
        .values("token_family")
        .annotate(first=Min("created"))
    )
    for row in first_issued:
        connection = families[row["token_family"]]
        connection.authorized_at = min(filter(None, (connection.authorized_at, row["first"])))
    tenants = tenants_by_slug(slugs={s for c in found.values() if (s := tenant_slug_of(c.resource))})
    words = get_scopes_backend().get_all_scopes()  # one query for the page, however many connections
    for connection in found.values():
        connection.tenant = tenants.get(tenant_slug_of(connection.resource) or "")
        connection.scope_descriptions = _described(connection.scopes, words)
    return sorted(found.values(), key=lambda c: (c.face.name.lower(), c.application.pk, c.resource))


def _matching(rows: Iterable[M], resource: str) -> list[M]:
    return [row for row in rows if _one_resource(getattr(row, "resource", None)) == resource]


def connection_revoke(*, user: AbstractBaseUser, application_id: int, resource: str) -> bool:
    """End the client's access to ``resource`` for ``user``: its refresh tokens (whole rotation families),
    access tokens, pending authorization codes, and the tokens exchanged from its tokens (by then the
    exchanges they came from have committed: each locked the token it exchanged, which is deleted first).
    False when there was nothing to revoke.
    """
    refresh_model = get_refresh_token_model()
    access_model = get_access_token_model()
    with transaction.atomic():
        refreshes = _matching(
            refresh_model.objects.filter(user=user, application_id=application_id, revoked__isnull=True), resource
        )
        for refresh in refreshes:
            if refresh.token_family:
                refresh_model.revoke_family(refresh.token_family)
            else:
                refresh.revoke()
        accesses = _matching(access_model.objects.filter(user=user, application_id=application_id), resource)
        access_model.objects.filter(pk__in=[a.pk for a in accesses]).delete()
        grants = _matching(get_grant_model().objects.filter(user=user, application_id=application_id), resource)
        get_grant_model().objects.filter(pk__in=[g.pk for g in grants]).delete()
        client_id = TenantApplication.objects.filter(pk=application_id).values_list("client_id", flat=True).first()
        access_model.objects.filter(
            user=user, exchange__subject_client_id=client_id, exchange__subject_resource=resource
        ).delete()
    return bool(refreshes or accesses or grants)
