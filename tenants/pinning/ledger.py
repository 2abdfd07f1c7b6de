"""The held changes of one source (``PendingChange`` rows) as one run of it sees them: a refresh or re-import records
what the source proposes (the same proposal again only moves ``last_seen``; a rejected one raises nothing; at most
``PENDING_LIMIT`` wait per source, the rest are counted), an approval settles what it applied. Reads for the admin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from tenants.models import OpenApiSource, PendingChange, Upstream, Withheld
from tenants.pinning.compatibility import input_schema_breaks
from tenants.pinning.definitions import JSONObject, definition_digest, input_schema_of

Source = Upstream | OpenApiSource
# Changes waiting per source: enough to review in one sitting; a source proposing more is counted, not stored.
PENDING_LIMIT = 200


def tool_key(name: str) -> str:
    """How pending changes (and ``Upstream.excluded``) name a source's tool (``name``: as the source names it)."""
    return f"tools:{name}"


def key_name(key: str) -> str:
    """The item's name in a pending change's key: ``echo`` of ``tools:echo``."""
    return key.partition(":")[2]


def source_filter(source: Source) -> dict[str, Any]:
    """The lookup of ``source``'s pending changes."""
    return {"upstream": source} if isinstance(source, Upstream) else {"openapi_source": source}


class ChangeLedger:
    """The pending changes of ``source``, read (and locked) once. ``recording``: this run read the source itself (a
    refresh, a re-import), so what it proposes is recorded and what it no longer proposes is forgotten; otherwise
    (an approval, an overrides change) the ledger only answers, and settles the items approved."""

    def __init__(self, *, source: Source, recording: bool, limit: int | None = None) -> None:
        self.source = source
        self.recording = recording
        self.limit = PENDING_LIMIT if limit is None else limit
        rows = PendingChange.objects.select_for_update().filter(**source_filter(source))
        self.records: dict[str, PendingChange] = {row.item_key: row for row in rows}
        self.pending = sum(1 for row in self.records.values() if row.status == PendingChange.Status.PENDING)
        self.touched: set[str] = set()
        self.repeated: list[int] = []
        self.overflow = 0
        self.now = timezone.now()

    def rejected(self, key: str, kind: str, proposed: JSONObject | None) -> bool:
        """Whether an admin rejected exactly this proposal for ``key`` (then nothing is raised again)."""
        record = self.records.get(key)
        return (
            record is not None
            and record.status == PendingChange.Status.REJECTED
            and record.digest == definition_digest(kind, proposed)
        )

    def propose(self, key: str, kind: str, approved: JSONObject | None, proposed: JSONObject | None) -> bool:
        """The source proposes ``proposed`` (None: the item's removal) for ``key`` in place of ``approved`` (None:
        a new item). Recorded as pending unless this very proposal waits already (its ``last_seen`` moves) or was
        rejected; returns whether it was rejected (the approved definition is then served without a review)."""
        self.touched.add(key)
        digest = definition_digest(kind, proposed)
        record = self.records.get(key)
        if record is not None and record.digest == digest:
            if record.status == PendingChange.Status.PENDING and self.recording:
                self.repeated.append(record.pk)
            return record.status == PendingChange.Status.REJECTED
        if not self.recording:
            return False
        replaces_pending = record is not None and record.status == PendingChange.Status.PENDING
        if not replaces_pending and self.pending >= self.limit:
            self.overflow += 1
            return False
        if record is None:
            record = PendingChange(tenant_id=self.source.tenant_id, item_key=key, **source_filter(self.source))
        record.kind, record.status, record.digest = kind, PendingChange.Status.PENDING, digest
        record.approved, record.proposed = approved, proposed
        record.first_seen = record.last_seen = self.now
        record.decided_by, record.decided_at = None, None
        record.save()
        self.records[key] = record
        if not replaces_pending:
            self.pending += 1
        return False

    def propose_definition(
        self, key: str, approved: JSONObject | None, proposed: JSONObject, *, withhold_incompatible: bool
    ) -> tuple[bool, str]:
        """The source proposes ``proposed`` for the tool ``key`` in place of ``approved`` (None: a new tool), recorded
        by ``propose``: whether this proposal was rejected, and why the approved tool is withheld meanwhile ("": it
        is served). With ``withhold_incompatible``, a tool whose new input schema may refuse calls the approved one
        took is withheld until its change is decided (a rejected change is decided)."""
        rejected = self.propose(
            key, PendingChange.Kind.ADD if approved is None else PendingChange.Kind.CHANGE, approved, proposed
        )
        incompatible = (
            withhold_incompatible
            and approved is not None
            and not rejected
            and bool(input_schema_breaks(input_schema_of(approved), input_schema_of(proposed)))
        )
        return rejected, Withheld.INCOMPATIBLE if incompatible else ""

    def settle(self, key: str, *, approved: bool = False) -> None:
        """The item ``key`` is as approved again (the source went back to it), or its change was ``approved`` and
        applied now: a pending change of it goes. A rejection stays on record while the source still lists the item,
        so that proposing the same again raises nothing."""
        self.touched.add(key)
        record = self.records.get(key)
        if record is None:
            return
        if approved or (self.recording and record.status == PendingChange.Status.PENDING):
            record.delete()
            del self.records[key]

    def finish(self) -> None:
        """Move ``last_seen`` of the proposals seen again; after a run that read the source, forget the changes of
        items it no longer has (a new tool gone again, an item now left out) and keep count of what did not fit."""
        if self.repeated:
            PendingChange.objects.filter(pk__in=self.repeated).update(last_seen=self.now)
        if not self.recording:
            return
        stale = [row.pk for key, row in self.records.items() if key not in self.touched]
        if stale:
            PendingChange.objects.filter(pk__in=stale).delete()
        if self.source.held_overflow != self.overflow:
            self.source.held_overflow = self.overflow
            type(self.source).objects.filter(pk=self.source.pk).update(held_overflow=self.overflow)


def held_changes_forget(*, source: Source) -> None:
    """Drop every held change of ``source`` (it accepts changes now: what it lists is what it serves)."""
    PendingChange.objects.filter(**source_filter(source)).delete()
    if source.held_overflow:
        source.held_overflow = 0
        type(source).objects.filter(pk=source.pk).update(held_overflow=0)


def pending_changes(*, source: Source) -> QuerySet[PendingChange]:
    """The changes of ``source`` waiting for review, by item."""
    return PendingChange.objects.filter(status=PendingChange.Status.PENDING, **source_filter(source)).order_by(
        "item_key"
    )


def pending_count(*, source: Source) -> int:
    return pending_changes(source=source).count()


@dataclass
class ChangesDecided:
    """What deciding a source's held changes did: those ``decided`` (applied, or rejected), those that ``moved``
    since the admin looked (a newer proposal, or decided by someone else: left alone), and why an approved one could
    not be applied (``refused``: e.g. its name taken meanwhile; it stays pending)."""

    decided: list[PendingChange] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def pending_as_seen(*, source: Source, seen: Mapping[str, str]) -> tuple[list[PendingChange], list[str]]:
    """The pending changes of ``source`` that ``seen`` names (by item key, each with the digest of the proposal the
    admin saw), and the keys of those whose proposal moved since (left for another look)."""
    changes = [c for c in pending_changes(source=source) if seen.get(c.item_key) == c.digest]
    return changes, sorted(set(seen) - {c.item_key for c in changes})


def source_title(source: Source) -> str:
    """How pages and comments name ``source``: "upstream notes", "OpenAPI source petstore"."""
    return f"upstream {source.name}" if isinstance(source, Upstream) else f"OpenAPI source {source.name}"


def held_changes_note(source: Source, changes: Iterable[PendingChange], *, approved: bool) -> str:
    """How the history's comment says what was decided: "Approved held changes of upstream notes: echo (changed
    definition), fresh (new tool)"."""
    listed = ", ".join(f"{key_name(c.item_key)} ({c.get_kind_display().lower()})" for c in changes)
    return f"{'Approved' if approved else 'Rejected'} held changes of {source_title(source)}: {listed}"


def pending_reject(*, changes: Iterable[PendingChange], user_id: int | None) -> list[PendingChange]:
    """Mark ``changes`` rejected by ``user_id``: the approved definitions stay, and the same proposals raise nothing
    again (a different one does). Returns them. The source's own service re-serves what was withheld."""
    rejected = list(changes)
    now = timezone.now()
    for change in rejected:
        change.status, change.decided_by_id, change.decided_at = PendingChange.Status.REJECTED, user_id, now
    PendingChange.objects.bulk_update(rejected, ["status", "decided_by", "decided_at"])
    return rejected
