"""Re-imports of an OpenAPI source that holds changes: what the import would add, change and remove is recorded as
pending changes instead (the approved tools keep being served; a removed operation's tool is withheld, and with
``withhold_incompatible`` so is a tool whose new input schema is incompatible), and an admin approves or rejects
each, through this module, with one ``list_changed`` per decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from tenants.bulk_changes import CHANGE, CREATE, DELETE, SYSTEM, Actor, BulkChange, bulk_change_announce
from tenants.events import catalog_changed
from tenants.history.revisions import catalog_revision, history_note, history_record
from tenants.models import OpenApiSource, PendingChange, Tool, Withheld
from tenants.pinning.definitions import JSONObject, canonical
from tenants.pinning.ledger import (
    ChangeLedger,
    ChangesDecided,
    held_changes_note,
    key_name,
    pending_as_seen,
    pending_reject,
    tool_key,
)
from tenants.validation import tool_validate

REMOVE = PendingChange.Kind.REMOVE
# The fields of a tool an operation sets (``ToolPlan.fields``), besides its name.
DOCUMENT_FIELDS = ("title", "description", "input_schema", "output_schema", "annotations", "backend", "config")


def _definition(tool: Tool, keys: Any) -> JSONObject:
    """``tool``'s values of the fields a document sets (``keys``), with its name: its approved definition."""
    return {"name": tool.name, **{key: getattr(tool, key) for key in keys if key != "name"}}


@dataclass
class HeldImport:
    """What a held re-import recorded: the tools whose change (or addition, or removal) waits, those unchanged."""

    held: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)


def openapi_import_held(
    *, source: OpenApiSource, proposals: list[JSONObject], refusal: Any, skipped: list[tuple[str, str]]
) -> HeldImport:
    """Record what importing ``proposals`` (each a tool's name and fields, in the document's order) would change in
    ``source``'s tools as pending changes, withholding what the source's settings say; in the import's transaction.
    ``refusal(tool)`` says why the rules refuse a tool (None: they do not): a new operation they refuse is skipped
    (added to ``skipped`` by name) rather than raised."""
    ledger = ChangeLedger(source=source, recording=True)
    ours = {tool.name: tool for tool in Tool.objects.select_for_update().filter(openapi_source=source)}
    outcome = HeldImport()
    withheld: dict[str, str] = {}
    for proposed in proposals:
        name = proposed["name"]
        key, tool = tool_key(name), ours.get(name)
        approved = _definition(tool, proposed) if tool is not None else None
        if tool is not None:
            withheld[name] = ""
        if approved is not None and canonical(approved) == canonical(proposed):
            ledger.settle(key)
            outcome.unchanged.append(name)
            continue
        # An operation the rules refuse is skipped, as an import skips it; its tool (if any) stays as approved.
        problem = refusal(Tool(tenant_id=source.tenant_id, **proposed))
        if problem is not None:
            skipped.append((name, problem))
            ledger.settle(key)
            continue
        rejected, why = ledger.propose_definition(
            key, approved, proposed, withhold_incompatible=source.withhold_incompatible
        )
        (outcome.rejected if rejected else outcome.held).append(name)
        if tool is not None:
            withheld[name] = why
    for name, tool in ours.items():
        if name in withheld:
            continue
        rejected = ledger.propose(tool_key(name), REMOVE, _definition(tool, DOCUMENT_FIELDS), None)
        (outcome.rejected if rejected else outcome.held).append(name)
        withheld[name] = Withheld.REMOVED
    ledger.finish()
    changed = [tool for name, tool in ours.items() if tool.withheld != withheld[name]]
    for tool in changed:
        tool.withheld = withheld[tool.name]
    if changed:
        Tool.objects.bulk_update(changed, ["withheld"])
        catalog_changed(tenant_id=source.tenant_id, kind="tools")
    return outcome


def openapi_changes_decide(
    *, source: OpenApiSource, seen: Mapping[str, str], approve: bool, actor: Actor = SYSTEM
) -> ChangesDecided:
    """Approve (``approve``) or reject the pending changes of ``source`` that ``seen`` names, by item key, each with
    the digest of the proposal the admin saw (a change that moved since is left alone). Approving creates, updates or
    deletes the tool as proposed; rejecting keeps the approved tool (served again if it was withheld for an
    incompatible schema; withheld still if its operation is gone) and the same proposal is not raised again.
    A decision is a revision of the catalog's history (the source and the tools it wrote), by ``actor``, saying what
    was decided."""
    with catalog_revision(user=actor.user_id):
        source = OpenApiSource.objects.select_for_update().get(pk=source.pk)
        changes, moved = pending_as_seen(source=source, seen=seen)
        outcome = ChangesDecided(moved=moved)
        tools = {tool_key(t.name): t for t in Tool.objects.select_for_update().filter(openapi_source=source)}
        bulk = BulkChange(
            tenant_id=source.tenant_id,
            operation=f"OpenAPI changes {'approved' if approve else 'rejected'}",
            source=source.name,
            actor=actor,
        )
        if approve:
            for change in changes:
                problem = _apply(source, change, tools.get(change.item_key), bulk)
                if problem is None:
                    change.delete()
                    outcome.decided.append(change)
                else:
                    outcome.refused.append(f"{key_name(change.item_key)}: {problem}")
        else:
            outcome.decided = pending_reject(changes=changes, user_id=actor.user_id)
            for change in changes:
                tool = tools.get(change.item_key)
                if tool is not None and tool.withheld == Withheld.INCOMPATIBLE:
                    tool.withheld = Withheld.NO
                    tool.save(update_fields=["withheld", "updated_at"])
                    bulk.add(CHANGE, tool)
        if bulk.items:
            catalog_changed(tenant_id=source.tenant_id, kind="tools")
        if outcome.decided:
            history_note(held_changes_note(source, outcome.decided, approved=approve))
            history_record(source, always=True)
        bulk_change_announce(bulk)
    return outcome


def _apply(source: OpenApiSource, change: PendingChange, tool: Tool | None, bulk: BulkChange) -> str | None:
    """Apply one approved change; why it cannot be (the rules refuse the tool, its name is taken), or None."""
    if change.kind == REMOVE:
        if tool is not None:
            bulk.add(DELETE, tool)
            tool.delete()
        return None
    proposed: dict[str, Any] = dict(change.proposed or {})
    if tool is None:
        tool = Tool(tenant_id=source.tenant_id, **proposed)
        tool.openapi_source = source  # type: ignore[attr-defined]
        action = CREATE
    else:
        for key, value in proposed.items():
            setattr(tool, key, value)
        tool.withheld = Withheld.NO
        tool.updated_at = timezone.now()
        action = CHANGE
    try:
        tool_validate(tool)
        with transaction.atomic():
            tool.save()
    except ValidationError as exc:
        return "; ".join(f"{name}: {' '.join(messages)}" for name, messages in exc.message_dict.items())
    except IntegrityError:
        return "another tool of this name was saved meanwhile"
    bulk.add(action, tool)
    return None
