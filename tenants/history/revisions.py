"""One revision around a change: ``catalog_revision`` groups every versioned row the writes inside it save, with who
made the change and a comment saying what it did, in the writing transaction.

Services open one around their own writes, so every path (the admin, commands, the shell, a configuration applied
from a file) leaves versions; an outer one (an admin save, a restore, an import, an apply) makes the inner ones part
of it, so one change is one revision. Use this, never ``reversion.create_revision`` directly: it runs reversion in
manual mode, and only the rows ``Versioned.keep`` accepts are added (an upstream refresh adds none).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import reversion
from django.contrib.auth import get_user_model
from django.core import serializers
from django.db import models
from reversion.models import Revision, Version

from tenants.history.models import RevisionTenant
from tenants.history.versioned import Versioned, field_label, versioned_entry

# A revision's comment is for reading in a table: past this many characters the rest is counted, not listed.
COMMENT_CHARACTERS = 500


@dataclass
class _Open:
    """The outermost ``catalog_revision`` of this context: whom it is by, what the services said they did, and which
    tenants its versions belong to."""

    user: Any = None
    notes: list[str] = field(default_factory=list)
    tenant_ids: set[int] = field(default_factory=set)


_open: ContextVar[_Open | None] = ContextVar("catalog-revision", default=None)
# The person an admin request acts for (``acting_as``): a revision opened without a user is theirs.
_acting: ContextVar[Any] = ContextVar("catalog-revision-actor", default=None)


@contextmanager
def catalog_revision(user: Any = None, comment: str = "", *, atomic: bool = True) -> Iterator[None]:
    """One revision of every versioned row saved inside, by ``user`` (a user, a user id, or None: the person the
    admin request acts for, else nobody: a command or a schedule), with ``comment`` (else what the services noted).

    Nested, it joins the outer revision: its user counts when the outer has none, its comment becomes a note. The
    revision is stored when the outermost block ends, in its transaction (``atomic``), and only if it holds a
    version; nothing is stored when the block raises.
    """
    state = _open.get()
    outer = state is None
    if state is None:
        state = _Open()
        token = _open.set(state)
    if state.user is None and user is not None:
        state.user = user
    if comment and not outer:
        state.notes.append(comment)
    try:
        with reversion.create_revision(manage_manually=True, atomic=atomic):
            yield
            if outer:
                _finish(state, comment)
    finally:
        if outer:
            _open.reset(token)


def _user_of(user: Any) -> Any:
    if isinstance(user, int):
        return get_user_model()(pk=user)
    return user if getattr(user, "pk", None) is not None else None


def _finish(state: _Open, comment: str) -> None:
    user = _user_of(state.user if state.user is not None else _acting.get())
    if user is not None:
        reversion.set_user(user)
    reversion.set_comment(revision_comment(comment, state.notes))
    for tenant_id in sorted(state.tenant_ids):
        reversion.add_meta(RevisionTenant, tenant_id=tenant_id)


def revision_comment(comment: str, notes: list[str]) -> str:
    """``comment``, else the services' notes (each once, in order), cut at ``COMMENT_CHARACTERS``."""
    if comment:
        return comment[:COMMENT_CHARACTERS]
    shown: list[str] = []
    length = 0
    unique = list(dict.fromkeys(notes))
    for note in unique:
        # Room is kept for the count of the rest.
        if shown and length + len(note) > COMMENT_CHARACTERS - len("; and 99999 more"):
            return "; ".join(shown) + f"; and {len(unique) - len(shown)} more"
        shown.append(note)
        length += len(note) + 2
    return "; ".join(shown)[:COMMENT_CHARACTERS]


def history_note(text: str) -> None:
    """Say what a service did ("Changed tool weather: description") for the open revision's comment; nothing when
    no revision is open."""
    state = _open.get()
    if state is not None and text:
        state.notes.append(text)


def history_record(obj: models.Model, *, always: bool = False) -> None:
    """Add ``obj`` as it is now to the open revision: for writes that send no ``post_save`` (``bulk_create``,
    ``bulk_update``), or (``always``) to keep a decision on the row it is about even when the row itself did not
    change (an approval of a source's held change, which changes rows the history does not keep). Nothing when no
    revision is open or the row is not versioned."""
    entry = versioned_entry(type(obj))
    if entry is not None and entry.keep(obj):
        _add(entry, obj, always=always)


def _same_as_last(entry: Versioned, obj: models.Model) -> bool:
    """Whether ``obj`` holds what its last version holds (the fields a version keeps)."""
    last = Version.objects.get_for_object(obj).only("serialized_data").first()
    if last is None:
        return False
    now = serializers.serialize("json", (obj,), fields=entry.kept_fields)
    return bool(json.loads(last.serialized_data)[0]["fields"] == json.loads(now)[0]["fields"])


def _add(entry: Versioned, obj: models.Model, *, always: bool = False) -> None:
    state = _open.get()
    if state is None or not reversion.is_active():
        return
    if entry.saves_unchanged and not always and _same_as_last(entry, obj):
        return
    reversion.add_to_revision(obj)
    tenant_id = entry.tenant_id_of(obj)
    if tenant_id is not None:
        state.tenant_ids.add(tenant_id)


def version_on_save(sender: type[models.Model], instance: models.Model, raw: bool = False, **kwargs: Any) -> None:
    """``post_save`` receiver (every model; connected at the app's ``ready()``): a versioned row saved inside a
    ``catalog_revision`` joins it."""
    if raw or _open.get() is None:
        return
    entry = versioned_entry(sender)
    if entry is not None and entry.keep(instance):
        _add(entry, instance)


@contextmanager
def acting_as(user: Any) -> Iterator[None]:
    """Revisions opened inside without a user of their own are ``user``'s (the admin site wraps every request)."""
    token = _acting.set(user)
    try:
        yield
    finally:
        _acting.reset(token)


def describe(obj: models.Model) -> str:
    """How a comment names ``obj``: its kind and name ("tool weather")."""
    return f"{obj._meta.verbose_name} {obj}"


def _in_history(obj: models.Model) -> bool:
    entry = versioned_entry(type(obj))
    return entry is not None and entry.keep(obj)


def note_added(obj: models.Model) -> None:
    """Note that ``obj`` was added (rows the history does not keep are not named)."""
    if _in_history(obj):
        history_note(f"Added {describe(obj)}")


def note_deleted(obj: models.Model) -> None:
    """Note that ``obj`` is deleted (its versions stay: it can be recovered)."""
    if _in_history(obj):
        history_note(f"Deleted {describe(obj)}")


def note_change(obj: models.Model, changed: Collection[str]) -> None:
    """Note that the ``changed`` fields of ``obj`` changed (nothing when none did)."""
    if changed and _in_history(obj):
        names = ", ".join(field_label(type(obj), name) for name in sorted(changed))
        history_note(f"Changed {describe(obj)}: {names}")


def tenant_history_delete(tenant_id: int) -> None:
    """Delete the revisions of ``tenant_id`` (with its versions), for a tenant that is deleted: its history goes
    with it. A revision that also changed another tenant (only a platform command makes one) goes too."""
    Revision.objects.filter(tenant_links__tenant_id=tenant_id).delete()
