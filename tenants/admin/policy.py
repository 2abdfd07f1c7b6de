"""Who administers which tenant: the one policy the admin asks. Owners and admins of a tenant administer it,
owners also manage its memberships, members have no admin, and superusers administer every tenant.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db.models import Model, QuerySet
from django.http import HttpRequest

from tenants.models import Membership, Tenant

M = TypeVar("M", bound=Model)

OWNER = Membership.Role.OWNER.value
ADMIN = Membership.Role.ADMIN.value
# The roles that open the admin; a member's role opens nothing.
ADMINISTERING: frozenset[str] = frozenset({OWNER, ADMIN})
OWNING: frozenset[str] = frozenset({OWNER})


def _administering_roles(user: Any) -> dict[int, str]:
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return {}
    rows = Membership.objects.filter(user_id=user.pk, role__in=ADMINISTERING).values_list("tenant_id", "role")
    return dict(rows)


def tenant_ids_administered_by(user: Any) -> frozenset[int]:
    """The tenants ``user`` administers: those where they are owner or admin; every tenant for a superuser."""
    if getattr(user, "is_superuser", False) and user.is_active:
        return frozenset(Tenant.objects.values_list("pk", flat=True))
    return frozenset(_administering_roles(user))


def tenant_ids_owned_by(user: Any) -> frozenset[int]:
    """The tenants whose memberships ``user`` manages: those they own; every tenant for a superuser."""
    if getattr(user, "is_superuser", False) and user.is_active:
        return frozenset(Tenant.objects.values_list("pk", flat=True))
    return frozenset(tenant for tenant, role in _administering_roles(user).items() if role == OWNER)


@dataclass(frozen=True)
class AdminScope:
    """One person's reach in the admin, resolved once per request: every tenant (``everything``, superusers) or
    the roles they hold in the tenants they administer."""

    everything: bool
    roles: Mapping[int, str] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        """Whether the admin is open to them at all."""
        return self.everything or bool(self.roles)

    def tenant_ids(self, roles: Collection[str] = ADMINISTERING) -> frozenset[int]:
        """The tenants where they hold one of ``roles`` (meaningless for ``everything``: check it first)."""
        return frozenset(tenant for tenant, role in self.roles.items() if role in roles)

    def allows(self, tenant_id: int | None, roles: Collection[str] = ADMINISTERING) -> bool:
        """Whether they may act on ``tenant_id`` with one of ``roles``; nothing without a tenant but for superusers."""
        if self.everything:
            return True
        return tenant_id is not None and self.roles.get(tenant_id) in roles

    def holds(self, roles: Collection[str]) -> bool:
        """Whether they hold one of ``roles`` in some tenant (the model-level question of the admin)."""
        return self.everything or any(role in roles for role in self.roles.values())

    def filter(self, queryset: QuerySet[M], tenant_path: str, roles: Collection[str] = ADMINISTERING) -> QuerySet[M]:
        """``queryset`` narrowed to rows whose tenant, reached through ``tenant_path`` ("" for tenants themselves),
        is one they hold ``roles`` in. Rows with no tenant are for superusers only."""
        if self.everything:
            return queryset
        lookup = f"{tenant_path}__in" if tenant_path else "pk__in"
        return queryset.filter(**{lookup: self.tenant_ids(roles)})


NO_ADMIN = AdminScope(everything=False)


def admin_scope_for(user: Any) -> AdminScope:
    """The scope of ``user`` (one query for a person with memberships, none for a superuser)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return NO_ADMIN
    if user.is_superuser:
        return AdminScope(everything=True)
    return AdminScope(everything=False, roles=_administering_roles(user))


def admin_scope(request: HttpRequest) -> AdminScope:
    """The scope of the person making ``request``, resolved on first use and kept on the request."""
    scope: AdminScope | None = getattr(request, "_admin_scope", None)
    if scope is None:
        scope = admin_scope_for(request.user)
        request._admin_scope = scope  # type: ignore[attr-defined]
    return scope
