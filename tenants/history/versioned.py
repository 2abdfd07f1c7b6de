"""What is versioned: one ``Versioned`` entry per model, registered once at start-up by the app that owns the model
(``tenants.history.entries`` for the tenant domain, ``QuotasConfig.ready()`` for rate limits). Adding a model to the
history is one entry; nothing else lists the versioned models.

An entry names the fields a version keeps (never a secret's value: secrets and personal credentials are not
versioned, and the fields kept hold only secret *names*), which rows are versioned at all, and how a version goes
back through the services.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import reversion
from django.db import models

JSONObject = dict[str, Any]
# Puts a version's values back through the services: ``restore(current, tenant, values)`` changes ``current`` (None:
# the row was deleted, and is made again) and returns the stored row. Raises ``ValidationError``.
Restorer = Callable[[Any, Any, JSONObject], models.Model]


def restore_through(
    create: Callable[..., models.Model], update: Callable[..., models.Model], argument: str
) -> Restorer:
    """The ``Restorer`` of a model whose services are ``create(tenant=..., **values)`` and
    ``update(<argument>=row, data=values)`` (``tool_create``, ``tool_update(tool=...)``)."""

    def restore(current: Any, tenant: Any, values: JSONObject) -> models.Model:
        if current is None:
            return create(tenant=tenant, **values)
        return update(**{argument: current}, data=values)

    return restore


def _always(obj: Any) -> bool:
    return True


def _no_secrets(values: Mapping[str, Any]) -> list[str]:
    return []


def _no_refusal(current: Any, values: Mapping[str, Any]) -> str:
    return ""


@dataclass(frozen=True)
class Versioned:
    """How one model is versioned.

    ``fields``: what a version keeps and the history shows, besides the tenant; ``restorable``: those a restore
    writes back (the fields its services change; all of ``fields`` when empty); ``restore``: the services that write
    them (None: shown, never restored, and ``not_restorable`` says why); ``keep``: whether a saved row is versioned
    (rows mirrored from an upstream are not: their upstream's overrides are); ``secrets``: the secret names values
    refer to (a restore needs them to exist); ``refusal(current, values)``: why a version cannot go back, or "";
    ``tenant_field``: how a row names its tenant ("" for the tenant
    itself); ``recoverable``: whether a deleted row may be made again from a version; ``saves_unchanged``: its services
    save a row whose kept fields did not change (a version equal to the last is then not added, at one query).
    """

    model: type[models.Model]
    fields: tuple[str, ...]
    restore: Restorer | None = None
    restorable: tuple[str, ...] = ()
    not_restorable: str = ""
    keep: Callable[[Any], bool] = _always
    secrets: Callable[[Mapping[str, Any]], list[str]] = _no_secrets
    refusal: Callable[[Any, Mapping[str, Any]], str] = _no_refusal
    tenant_field: str = "tenant"
    recoverable: bool = True
    saves_unchanged: bool = False

    @property
    def kept_fields(self) -> tuple[str, ...]:
        """Every field a version stores: the tenant first, then ``fields``."""
        return (self.tenant_field, *self.fields) if self.tenant_field else self.fields

    @property
    def restored_fields(self) -> tuple[str, ...]:
        return self.restorable or self.fields

    @property
    def recovers(self) -> bool:
        """Whether a deleted row of this model can be brought back (a restorer that can create, and allowed)."""
        return self.recoverable and self.restore is not None

    def tenant_id_of(self, obj: models.Model) -> int | None:
        """The tenant ``obj`` belongs to."""
        if not self.tenant_field:
            return int(obj.pk) if obj.pk is not None else None
        value = getattr(obj, model_field(self.model, self.tenant_field).attname, None)
        return int(value) if value is not None else None

    def label(self) -> str:
        return str(self.model._meta.verbose_name)


def model_field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    """The concrete field ``name`` of ``model`` (a version keeps only those). Raises ``ValueError`` for a relation
    seen from its other side."""
    found = model._meta.get_field(name)
    if not isinstance(found, models.Field):
        raise ValueError(f"{model._meta.label}.{name} is not a field a version keeps")
    return found


def field_label(model: type[models.Model], name: str) -> str:
    """How the pages and comments name a field: its verbose name ("input schema")."""
    return str(model_field(model, name).verbose_name)


_entries: dict[type[models.Model], Versioned] = {}


def versioned_register(entry: Versioned) -> None:
    """Version ``entry.model`` from now on. Raises ``ValueError`` when it is registered already."""
    if entry.model in _entries:
        raise ValueError(f"{entry.model._meta.label} is versioned already")
    unknown = [name for name in entry.restored_fields if name not in entry.fields]
    if unknown:
        raise ValueError(f"{entry.model._meta.label}: restorable fields not kept in a version: {unknown}")
    # A version equal to the last is left out by ``revisions`` itself (``saves_unchanged``), which may also keep one
    # on purpose (a decision recorded on its source: ``history_record(obj, always=True)``).
    reversion.register(entry.model, fields=entry.kept_fields)
    _entries[entry.model] = entry


def versioned_entry(model: type[models.Model] | None) -> Versioned | None:
    """The entry of ``model``, or None when it is not versioned."""
    return _entries.get(model) if model is not None else None


def versioned_models() -> list[type[models.Model]]:
    return list(_entries)
