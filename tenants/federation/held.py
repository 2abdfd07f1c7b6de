"""The mirror's side of pinned definitions: how a refresh of an upstream that holds changes treats its tools, and what
the upstream last offered as far as the mirror keeps it (its served rows and the changes it holds).

A held tool keeps its approved definition (``config["remote"]``, which the rows serve) while the upstream's new one
waits as a ``PendingChange``; a new tool is not created until approved; a tool the upstream dropped is withheld (not
listed, not called: the upstream no longer answers for it) until its removal is approved, which deletes the row, or
rejected, which keeps the row withheld with its approved definition, served again if the upstream offers it
unchanged. With ``withhold_incompatible``, a tool whose new input schema may refuse calls made to the approved one
(``tenants.pinning.compatibility``) is withheld until its change is decided.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from tenants.models import PendingChange, Tool, Upstream, Withheld
from tenants.pinning.definitions import JSONObject, canonical
from tenants.pinning.ledger import ChangeLedger, tool_key

ADD, REMOVE = PendingChange.Kind.ADD, PendingChange.Kind.REMOVE


class ToolHold:
    """One mirror run's decisions for the tools of an upstream that holds changes. ``recording``: the run read the
    upstream just now (its proposals are recorded); ``approving``: the keys of the changes an admin approved, which
    this run applies."""

    def __init__(self, upstream: Upstream, *, recording: bool, approving: Collection[str] = ()) -> None:
        # Runs of one upstream's mirror take turns (a refresh on its list_changed, an admin's refresh, an approval):
        # each reads the pending changes and may add the same one. PostgreSQL: this row lock; SQLite: its
        # transactions are IMMEDIATE.
        list(Upstream.objects.select_for_update().filter(pk=upstream.pk).values_list("pk", flat=True))
        self.ledger = ChangeLedger(source=upstream, recording=recording)
        self.withhold_incompatible = upstream.withhold_incompatible
        self.approving = frozenset(approving)

    def served(self, key: str, row: Tool | None, wire: JSONObject) -> tuple[JSONObject | None, str]:
        """The definition the tool ``key`` is served with (None: no row, it waits for approval) and why it is withheld
        ("" when it is not), given the upstream's ``wire`` and the mirrored ``row``."""
        approved = row.config.get("remote") if row is not None else None
        if approved is not None and canonical(approved) == canonical(wire):
            self.ledger.settle(key)
            return wire, ""
        if key in self.approving:
            return wire, ""
        _, withheld = self.ledger.propose_definition(
            key, approved, wire, withhold_incompatible=self.withhold_incompatible
        )
        return approved, withheld

    def applied(self, key: str) -> None:
        """The row of ``key`` was written as the upstream offers it: an approved change is done."""
        if key in self.approving:
            self.ledger.settle(key, approved=True)

    def removed(self, key: str, row: Tool) -> bool:
        """The upstream no longer offers ``key``: whether its row goes now (its removal was approved); otherwise it is
        withheld and the removal waits (or was rejected: it stays withheld)."""
        if key in self.approving:
            self.ledger.settle(key, approved=True)
            return True
        self.ledger.propose(key, REMOVE, row.config.get("remote"), None)
        return False

    def left_out(self, key: str) -> None:
        """The admin leaves ``key`` out of the catalog: its held change no longer matters."""
        self.ledger.settle(key, approved=True)

    def finish(self) -> None:
        self.ledger.finish()


def tools_as_offered(upstream: Upstream, rows: Iterable[Tool]) -> list[JSONObject]:
    """The tools the upstream offered at its last refresh: each served row's definition, with the changes held for
    review put back (a change's proposal, a new tool, a removal): a refresh without the network, which decides as
    the last one did."""
    changes = {change.item_key: change for change in PendingChange.objects.filter(upstream=upstream)}
    offered: list[JSONObject] = []
    for row in rows:
        remote: dict[str, Any] = row.config.get("remote") or {}
        change = changes.pop(tool_key(str(remote.get("name", row.name))), None)
        if change is not None:
            if change.kind != REMOVE and change.proposed is not None:
                offered.append(change.proposed)
        elif row.withheld != Withheld.REMOVED:
            offered.append(remote)
    offered.extend(c.proposed for c in changes.values() if c.kind == ADD and c.proposed is not None)
    return offered
