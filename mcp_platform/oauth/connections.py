"""A person's connected apps: which clients hold live tokens for them (selector) and disconnecting one (service)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_grant_model, get_refresh_token_model

from mcp_platform.oauth.models import TenantApplication


@dataclass
class Connection:
    application: TenantApplication
    resources: set[str] = field(default_factory=set)
    scopes: set[str] = field(default_factory=set)


def connection_list(*, user: AbstractBaseUser) -> list[Connection]:
    """Clients holding an unexpired access token or an unrevoked refresh token of ``user``, by name."""
    found: dict[int, Connection] = {}
    live_access = get_access_token_model().objects.filter(user=user, expires__gt=timezone.now())
    live_refresh = get_refresh_token_model().objects.filter(user=user, revoked__isnull=True)
    for token in [*live_access.select_related("application"), *live_refresh.select_related("application")]:
        if token.application is None:
            continue
        connection = found.setdefault(token.application_id, Connection(token.application))
        connection.resources.update(getattr(token, "resource", None) or [])
        connection.scopes.update(getattr(token, "scope", "").split())
    return sorted(found.values(), key=lambda c: (c.application.name.lower(), c.application.pk))


def connection_revoke(*, user: AbstractBaseUser, application_id: int) -> bool:
    """Revoke every token and pending code ``user`` gave the client; False when there was none."""
    with transaction.atomic():
        refreshed = get_refresh_token_model().objects.filter(
            user=user, application_id=application_id, revoked__isnull=True
        )
        count = 0
        for refresh_token in refreshed:
            refresh_token.revoke()
            count += 1
        deleted, _ = get_access_token_model().objects.filter(user=user, application_id=application_id).delete()
        get_grant_model().objects.filter(user=user, application_id=application_id).delete()
    return bool(count or deleted)
