"""The review page of a source's held changes (an upstream's, an OpenAPI source's): each pending change side by side
(the approved definition served now, the proposed one; a description as marked words, a schema as pretty JSON by
line), why a schema is incompatible, and Approve / Reject per change and for all. Each decision is audited
(``admin_changed``, action ``approve`` or ``reject``) and applied by the source's own service, which keeps it as a
revision of the source's history (linked from the page)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import partial
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from tenants.admin.audit import audit_action
from tenants.bulk_changes import Actor
from tenants.federation.services import upstream_changes_decide
from tenants.models import OpenApiSource, PendingChange, Tool, Upstream, Withheld
from tenants.openapi.held import openapi_changes_decide
from tenants.pinning import ledger
from tenants.pinning.compatibility import input_schema_breaks
from tenants.pinning.definitions import definition_parts, input_schema_of
from tenants.pinning.ledger import ChangesDecided, Source, key_name, pending_changes, source_title, tool_key

# A schema longer than this many lines is shown cut (the page stays usable; the stored proposal is whole).
MAX_LINES = 400
DECISIONS = {"approve": "approved", "reject": "rejected"}


@dataclass(frozen=True)
class Cell:
    text: str
    mark: str  # "" (the same on both sides), "del", "ins", "empty"


@dataclass
class PartDiff:
    """One part of a definition, approved beside proposed: marked words (text) or lines (JSON)."""

    label: str
    is_json: bool
    # Text parts: the words escaped, those one side alone has marked (``word_diff``).
    left: SafeString | str = ""
    right: SafeString | str = ""
    rows: list[tuple[Cell, Cell]] = field(default_factory=list)
    cut: bool = False


@dataclass
class ReviewItem:
    """One pending change as the page shows it: what differs, what does not, why its schema is incompatible."""

    change: PendingChange
    name: str
    served_as: Tool | None
    served_url: str
    parts: list[PartDiff]
    unchanged: list[str]
    breaks: list[str]

    @property
    def withheld(self) -> str:
        if self.served_as is None or not self.served_as.withheld:
            return ""
        return str(Withheld(self.served_as.withheld).label)

    @property
    def token(self) -> str:
        """What the page posts for this change: its digest and key (the proposal the admin saw)."""
        return f"{self.change.digest}:{self.change.item_key}"


def _words(text: str) -> list[str]:
    return re.split(r"(\s+)", text)


def word_diff(old: str, new: str) -> tuple[SafeString, SafeString]:
    """``old`` and ``new`` escaped, the words only one of them has marked (``<del>`` left, ``<ins>`` right)."""
    a, b = _words(old), _words(new)
    left: list[str] = []
    right: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        before, after = escape("".join(a[i1:i2])), escape("".join(b[j1:j2]))
        if tag == "equal":
            left.append(before)
            right.append(after)
            continue
        if before:
            left.append(f"<del>{before}</del>")
        if after:
            right.append(f"<ins>{after}</ins>")
    # Every piece was escaped above.
    return mark_safe("".join(left)), mark_safe("".join(right))


def line_diff(old: str, new: str) -> tuple[list[tuple[Cell, Cell]], bool]:
    """``old`` beside ``new`` line by line, lines only one side has marked; whether the rows were cut."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[tuple[Cell, Cell]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            rows.extend((Cell(a[i], ""), Cell(b[j], "")) for i, j in zip(range(i1, i2), range(j1, j2), strict=True))
            continue
        left, right = a[i1:i2], b[j1:j2]
        for k in range(max(len(left), len(right))):
            rows.append(
                (
                    Cell(left[k], "del") if k < len(left) else Cell("", "empty"),
                    Cell(right[k], "ins") if k < len(right) else Cell("", "empty"),
                )
            )
    return rows[:MAX_LINES], len(rows) > MAX_LINES


def _part_diffs(approved: Any, proposed: Any) -> tuple[list[PartDiff], list[str]]:
    """The parts that differ (or that one side alone has), and the labels of those that do not."""
    old, new = definition_parts(approved), definition_parts(proposed)
    diffs: list[PartDiff] = []
    unchanged: list[str] = []
    for label in [*old, *(label for label in new if label not in old)]:
        before = old[label].text if label in old else ""
        after = new[label].text if label in new else ""
        if label in old and label in new and before == after:
            unchanged.append(label)
            continue
        is_json = (old.get(label) or new[label]).is_json
        diff = PartDiff(label, is_json)
        if is_json:
            diff.rows, diff.cut = line_diff(before, after)
        else:
            diff.left, diff.right = word_diff(before, after)
        diffs.append(diff)
    return diffs, unchanged


def review_items(source: Source, rows: Mapping[str, Tool]) -> list[ReviewItem]:
    """The pending changes of ``source`` as the page shows them; ``rows``: its tools by item key."""
    items = []
    for change in pending_changes(source=source):
        parts, unchanged = _part_diffs(change.approved, change.proposed)
        row = rows.get(change.item_key)
        breaks = []
        if change.kind == PendingChange.Kind.CHANGE:
            breaks = input_schema_breaks(input_schema_of(change.approved), input_schema_of(change.proposed))
        items.append(
            ReviewItem(
                change=change,
                name=key_name(change.item_key),
                served_as=row,
                served_url=reverse("admin:tenants_tool_change", args=[row.pk]) if row is not None else "",
                parts=parts,
                unchanged=unchanged,
                breaks=breaks,
            )
        )
    return items


@dataclass(frozen=True)
class HeldSource:
    """A source whose held changes the page reviews: how to name it, its tools by item key, where to go back (its
    page, its history), and its service deciding changes (``decide(seen=, approve=, actor=)``)."""

    source: Source
    title: str
    back_url: str
    history_url: str
    rows: Mapping[str, Tool]
    decide: Callable[..., ChangesDecided]
    policy: str


def _seen(request: HttpRequest) -> dict[str, str]:
    """The changes the admin decides, as posted (``<digest>:<item key>``), by item key."""
    seen: dict[str, str] = {}
    for token in request.POST.getlist("change"):
        digest, _, key = token.partition(":")
        if re.fullmatch(r"[0-9a-f]{64}", digest) and key:
            seen[key] = digest
    return seen


def held_changes_view(
    request: HttpRequest, held: HeldSource, *, may_decide: bool, context: dict[str, Any]
) -> HttpResponse:
    """The review page (GET) and its decisions (POST: ``decision`` approve or reject, ``change`` per change)."""
    if request.method == "POST":
        if not may_decide:
            raise PermissionDenied
        decision = request.POST.get("decision", "")
        seen = _seen(request)
        if decision not in DECISIONS or not seen:
            messages.error(request, "Choose changes to approve or reject.")
        else:
            _decide(request, held, seen, approve=decision == "approve")
        return HttpResponseRedirect(request.get_full_path())
    items = review_items(held.source, held.rows)
    context.update(
        title=f"Review changes of {held.title}",
        held=held,
        items=items,
        all_tokens=[item.token for item in items],
        may_decide=may_decide,
        overflow=held.source.held_overflow,
        limit=ledger.PENDING_LIMIT,
    )
    return TemplateResponse(request, "admin/tenants/held_changes.html", context)


def _decide(request: HttpRequest, held: HeldSource, seen: dict[str, str], *, approve: bool) -> None:
    actor = Actor.person(request.user)
    outcome = held.decide(seen=seen, approve=approve, actor=actor)
    verb = DECISIONS["approve" if approve else "reject"]
    for change in outcome.decided:
        audit_action(
            request=request,
            tenant_id=held.source.tenant_id,
            action="approve" if approve else "reject",
            obj=change,
            object_repr=f"{change.item_key} of {held.title} ({change.get_kind_display().lower()})",
            before={"definition": change.approved},
            after={"definition": change.proposed} if approve else {"rejected": change.proposed},
        )
    if outcome.decided:
        names = ", ".join(key_name(change.item_key) for change in outcome.decided)
        messages.success(request, f"{len(outcome.decided)} change(s) of {held.title} {verb}: {names}.")
    if outcome.moved:
        moved = ", ".join(key_name(key) for key in outcome.moved)
        messages.warning(request, f"Changed since the page was shown, so left for another look: {moved}.")
    for problem in outcome.refused:
        messages.error(request, f"Not applied (it still waits): {problem}")


def _held_source(source: Source, rows: Mapping[str, Tool], decide: Callable[..., ChangesDecided]) -> HeldSource:
    admin_name = f"admin:{source._meta.app_label}_{source._meta.model_name}"
    return HeldSource(
        source=source,
        title=source_title(source),
        back_url=reverse(f"{admin_name}_change", args=[source.pk]),
        history_url=reverse(f"{admin_name}_history", args=[source.pk]),
        rows=rows,
        decide=decide,
        policy=source.get_change_policy_display(),
    )


def upstream_held_source(upstream: Upstream) -> HeldSource:
    rows = {tool_key(t.config.get("remote", {}).get("name", t.name)): t for t in Tool.objects.filter(upstream=upstream)}
    return _held_source(upstream, rows, partial(upstream_changes_decide, upstream=upstream))


def openapi_held_source(source: OpenApiSource) -> HeldSource:
    rows = {tool_key(t.name): t for t in Tool.objects.filter(openapi_source=source)}
    return _held_source(source, rows, partial(openapi_changes_decide, source=source))
