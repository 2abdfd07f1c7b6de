"""Reads of the history: a row's versions (newest first, each with what it changed), a version's values, the deleted
rows of a model that have versions, and which tenant a version belongs to. Scoping is the caller's: it passes the
tenants a person may see."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from django.db import models
from reversion.errors import RevertError
from reversion.models import Revision, Version

from tenants.history.diff import changed_fields
from tenants.history.versioned import Versioned, model_field

# Versions shown on a row's history page; older ones are counted, not listed.
HISTORY_PAGE = 100
# Deleted rows listed on a model's "recover" page, newest deletion first.
DELETED_PAGE = 200


@dataclass(frozen=True)
class VersionRow:
    """One version of a row: its number (1 is the first), its values, and the fields it changed from the version
    before (``created``: it is the first)."""

    version: Version
    number: int
    values: dict[str, Any]
    changed: tuple[str, ...]
    created: bool

    @property
    def who(self) -> str:
        return revision_author(self.version.revision)


def revision_author(revision: Revision) -> str:
    """Who made ``revision``: a person's username, or "system" (a command, a schedule)."""
    return revision.user.get_username() if revision.user is not None else "system"


def version_values(entry: Versioned, version: Version) -> dict[str, Any]:
    """The values ``version`` kept, by field name (a foreign key as the id); empty when its data cannot be read."""
    try:
        stored = version._local_field_dict
    except RevertError:
        return {}
    return {name: stored.get(model_field(entry.model, name).attname) for name in entry.kept_fields}


def version_tenant_id(entry: Versioned, version: Version) -> int | None:
    """The tenant whose row ``version`` is a version of."""
    if not entry.tenant_field:
        return int(version.object_id)
    tenant_id = version_values(entry, version).get(entry.tenant_field)
    return int(tenant_id) if isinstance(tenant_id, int) else None


def current_values(entry: Versioned, obj: models.Model) -> dict[str, Any]:
    """``obj``'s values as a version of it would keep them."""
    return {name: getattr(obj, model_field(type(obj), name).attname) for name in entry.kept_fields}


def _versions_of(entry: Versioned, object_id: str) -> models.QuerySet[Version]:
    return Version.objects.get_for_object_reference(entry.model, object_id).select_related("revision__user")


def object_history(entry: Versioned, object_id: str) -> tuple[list[VersionRow], int]:
    """The newest ``HISTORY_PAGE`` versions of the row ``object_id``, newest first, and how many it has in all."""
    versions = _versions_of(entry, object_id)
    total = versions.count()
    newest = list(versions.order_by("-pk")[: HISTORY_PAGE + 1])[::-1]
    rows: list[VersionRow] = []
    previous: dict[str, Any] | None = None
    first_number = total - len(newest) + 1
    for offset, version in enumerate(newest):
        values = version_values(entry, version)
        if offset > 0 or len(newest) <= HISTORY_PAGE:
            changed = tuple(changed_fields(entry.fields, previous, values)) if previous is not None else ()
            rows.append(VersionRow(version, first_number + offset, values, changed, previous is None))
        previous = values
    return rows[::-1], total


def version_number(version: Version) -> int:
    """Where ``version`` stands among its row's versions (1: the first)."""
    return Version.objects.filter(
        content_type_id=version.content_type_id, object_id=version.object_id, db=version.db, pk__lte=version.pk
    ).count()


def version_get(entry: Versioned, object_id: str, version_id: int) -> Version | None:
    """The version ``version_id`` of the row ``object_id``, or None when it is not one of its versions."""
    return _versions_of(entry, object_id).filter(pk=version_id).first()


def deleted_versions(entry: Versioned, tenant_ids: Collection[int] | None) -> list[Version]:
    """The last version of each deleted row of ``entry.model`` in ``tenant_ids`` (None: every tenant), newest
    first, at most ``DELETED_PAGE``."""
    versions = Version.objects.get_deleted(entry.model).select_related("revision__user").order_by("-pk")
    if tenant_ids is not None:
        versions = versions.filter(revision__tenant_links__tenant_id__in=tenant_ids).distinct()
    found = list(versions[:DELETED_PAGE])
    if tenant_ids is None:
        return found
    allowed = set(tenant_ids)
    return [version for version in found if version_tenant_id(entry, version) in allowed]
