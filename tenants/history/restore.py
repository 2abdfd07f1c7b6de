"""Restoring a version: its values go back through the model's services (so validation runs, clients hear
``list_changed``, caches drop) in a revision of its own, which is the row's newest version. A deleted row is made
again the same way. What a restore would do is planned first, so a page can show it before anyone confirms."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from reversion.models import Version

from tenants.history.diff import changed_fields
from tenants.history.revisions import catalog_revision
from tenants.history.selectors import current_values, version_number, version_tenant_id, version_values
from tenants.history.versioned import Versioned, field_label, versioned_entry
from tenants.models import Tenant
from tenants.secret_references import secrets_missing


@dataclass(frozen=True)
class RestorePlan:
    """What restoring ``version`` would do: write ``data`` (the restorable fields, narrowed to those the caller may
    change) over ``current`` (None: the row was deleted and is made again), changing ``changes``. ``problem`` says
    why it cannot be done ("" when it can)."""

    entry: Versioned
    version: Version
    number: int
    tenant_id: int | None
    current: models.Model | None
    values: dict[str, Any]
    data: dict[str, Any]
    changes: list[str] = field(default_factory=list)
    problem: str = ""

    @property
    def comment(self) -> str:
        when = timezone.localtime(self.version.revision.date_created).strftime("%Y-%m-%d %H:%M")
        name = self.version.object_repr
        verb = "Recovered" if self.current is None else "Restored"
        labels = ", ".join(field_label(self.entry.model, f) for f in self.changes)
        return f"{verb} {self.entry.label()} {name} to version {self.number} of {when}" + (
            f" ({labels})" if labels and self.current is not None else ""
        )


def _secrets_problem(tenant: Tenant | None, names: list[str]) -> str:
    if tenant is None or not names:
        return ""
    missing = secrets_missing(tenant=tenant, names=names)
    if not missing:
        return ""
    listed = ", ".join(repr(name) for name in missing)
    which = f"the secret {listed}" if len(missing) == 1 else f"the secrets {listed}"
    return (
        f"This version uses {which}, which {tenant.slug} no longer has: add it under Secrets first (with its value), "
        "then restore. Nothing was changed."
    )


def _problem(plan: RestorePlan, tenant: Tenant | None) -> str:
    """Why ``plan`` cannot be carried out, or ""."""
    entry, current = plan.entry, plan.current
    if entry.restore is None:
        return entry.not_restorable or "This kind of row cannot be restored."
    if not plan.values:
        return "This version's data can no longer be read."
    if tenant is None:
        return "Its tenant no longer exists."
    if current is None and not entry.recovers:
        return "A deleted row of this kind cannot be brought back from its history."
    if current is not None and entry.tenant_id_of(current) != tenant.pk:
        return "This version belongs to another tenant."
    refusal = entry.refusal(current, plan.values)
    if refusal:
        return refusal
    if not plan.changes:
        return "This version is the current one: there is nothing to restore."
    return _secrets_problem(tenant, entry.secrets(plan.data))


def restore_plan(*, version: Version, only: Collection[str] | None = None) -> RestorePlan:
    """What restoring ``version`` would change; ``only``: the fields the caller may change (None: all restorable)."""
    entry = versioned_entry(version._model)
    if entry is None:
        raise ValidationError("This kind of row has no history.")
    values = version_values(entry, version)
    tenant_id = version_tenant_id(entry, version)
    current = entry.model._default_manager.filter(pk=version.object_id).first()
    fields = [f for f in entry.restored_fields if only is None or f in only]
    data = {f: values.get(f) for f in fields}
    changes = changed_fields(fields, current_values(entry, current), data) if current is not None else list(fields)
    plan = RestorePlan(entry, version, version_number(version), tenant_id, current, values, data, changes)
    tenant = Tenant.objects.filter(pk=tenant_id).first() if tenant_id is not None else None
    return replace(plan, problem=_problem(plan, tenant))


def version_restore(*, version: Version, user: Any = None, only: Collection[str] | None = None) -> models.Model:
    """Put ``version`` back through the services, by ``user``, as one new revision; ``only``: the fields the caller
    may change. Returns the stored row.

    Raises ``ValidationError`` (and changes nothing) when the version cannot be restored: a secret it names is gone,
    the services refuse its values, it is the current one, or its kind is not restored.
    """
    plan = restore_plan(version=version, only=only)
    if plan.problem:
        raise ValidationError(plan.problem)
    assert plan.entry.restore is not None and plan.tenant_id is not None
    tenant = Tenant.objects.get(pk=plan.tenant_id)
    with catalog_revision(user=user, comment=plan.comment):
        restored = plan.entry.restore(plan.current, tenant, dict(plan.data))
        if plan.current is None:
            # A recovered row is a new row: its past versions become its own, so its history goes on where it stopped
            # (and it is no longer listed as deleted).
            Version.objects.filter(
                content_type_id=version.content_type_id, object_id=version.object_id, db=version.db
            ).update(object_id=str(restored.pk))
    return restored
