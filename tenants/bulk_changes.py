"""Bulk changes to a tenant's catalog (an OpenAPI import, an upstream's mirror refreshed): what each created,
changed and removed, who made it, and ``catalog_bulk_changed``, the signal that tells the rooms keeping records.

The services collect a ``BulkChange`` and announce it; they know nothing of who listens. The admin's history
(``tenants.admin.audit``) and the activity log (``mcp_platform.activity``, connected at its ``ready()``) listen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from django.db import models, transaction
from django.dispatch import Signal

CREATE: Final = "create"
CHANGE: Final = "change"
DELETE: Final = "delete"

# A bulk change, sent after commit with ``change`` (a ``BulkChange``). Receivers must not raise: the change is
# committed, and a record that could not be kept must not fail the admin action, command or task that made it.
catalog_bulk_changed = Signal()


@dataclass(frozen=True)
class Actor:
    """Who made a change: an admin (``user_id``), or no person (``label`` says what: a command, a schedule)."""

    label: str
    user_id: int | None = None

    @classmethod
    def person(cls, user: Any) -> Actor:
        """The signed-in ``user`` (a ``request.user``) as the actor."""
        return cls(label=user.get_username(), user_id=user.pk)


SYSTEM = Actor("system")
SCHEDULED_REFRESH = Actor("system (scheduled refresh)")
UPSTREAM_NOTICE = Actor("system (the upstream's list_changed)")


@dataclass(frozen=True)
class BulkItem:
    """One row a bulk change created, changed or deleted (``action``), as the records name it."""

    action: str
    model: type[models.Model]
    object_id: str
    object_repr: str

    @classmethod
    def of(cls, action: str, obj: models.Model) -> BulkItem:
        """``obj`` as it is now (before its deletion, for ``DELETE``)."""
        return cls(action, type(obj), str(obj.pk), str(obj))


@dataclass
class BulkChange:
    """One bulk operation on one tenant's catalog: ``operation`` ("OpenAPI import", "upstream refresh", ...) of
    ``source`` (the OpenAPI source's or upstream's name) by ``actor``, and the rows it touched."""

    tenant_id: int
    operation: str
    source: str
    actor: Actor
    items: list[BulkItem] = field(default_factory=list)

    def add(self, action: str, obj: models.Model) -> None:
        self.items.append(BulkItem.of(action, obj))

    def names(self, action: str) -> list[str]:
        return [item.object_repr for item in self.items if item.action == action]

    def summary(self) -> dict[str, list[str]]:
        """The names of what was added, changed and removed."""
        return {"added": self.names(CREATE), "changed": self.names(CHANGE), "removed": self.names(DELETE)}


def bulk_change_announce(change: BulkChange, *, when_empty: bool = False) -> None:
    """Send ``catalog_bulk_changed`` after the current transaction commits (at once outside one). A change that
    touched nothing is announced only ``when_empty`` (an import someone asked for; not a routine refresh)."""
    if change.items or when_empty:
        transaction.on_commit(lambda: catalog_bulk_changed.send(sender=BulkChange, change=change))
