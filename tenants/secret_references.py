"""Where a tenant's secrets are named: the configs of its tools (each backend says which secrets its config names),
its upstreams' authentication and its OpenAPI sources. Forms check the names exist before saving; the secret's page
lists its users, and deleting a used secret names them first."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tenants.backends.plugs import BACKENDS
from tenants.models import OpenApiSource, Secret, Tenant, Tool, Upstream
from tenants.outbound_auth import auth_secret_names


@dataclass(frozen=True, slots=True)
class SecretUse:
    """One thing that names a secret: its kind as the admin calls it, its name, and its model and id (for links)."""

    kind: str
    name: str
    model: type[Any]
    pk: int


def secret_names_in(backend: str, config: Any) -> list[str]:
    """The secrets ``config`` of an entry served by ``backend`` names (none for an unknown backend)."""
    plug = BACKENDS.get(backend)
    return plug.secret_names(config) if plug is not None else []


def secrets_missing(*, tenant: Tenant | int, names: Iterable[str]) -> list[str]:
    """Which of ``names`` are not secrets of ``tenant``, in order, once each."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return []
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    present = set(Secret.objects.filter(tenant_id=tenant_id, name__in=wanted).values_list("name", flat=True))
    return [name for name in wanted if name not in present]


def secret_missing_message(name: str, tenant: Tenant) -> str:
    return f"There is no secret {name!r} in {tenant.slug}: add it under Secrets first, or pick one of its secrets."


def secret_uses(*, secret: Secret) -> list[SecretUse]:
    """What names ``secret`` in its tenant: tools, upstreams and OpenAPI sources, each sorted by name."""
    uses: list[SecretUse] = []
    tools = Tool.objects.filter(tenant_id=secret.tenant_id).only("pk", "name", "backend", "config").order_by("name")
    uses += [
        SecretUse("tool", t.name, Tool, t.pk) for t in tools if secret.name in secret_names_in(t.backend, t.config)
    ]
    upstreams = Upstream.objects.filter(tenant_id=secret.tenant_id).only("pk", "name", "auth").order_by("name")
    uses += [
        SecretUse("upstream", u.name, Upstream, u.pk) for u in upstreams if secret.name in auth_secret_names(u.auth)
    ]
    sources = OpenApiSource.objects.filter(tenant_id=secret.tenant_id, secret_name=secret.name).order_by("name")
    uses += [SecretUse("OpenAPI source", s.name, OpenApiSource, s.pk) for s in sources]
    return uses
