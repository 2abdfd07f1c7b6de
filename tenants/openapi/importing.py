"""The import service: a translated document stored as one source's tools, in one transaction and one revision of
the history (the source and every tool it added or changed), with one ``list_changed`` after commit. Importing the
same source (tenant + location) again updates what changed, removes what vanished, and touches no tool it did not
make; or, when the source holds changes, records them for review (``tenants.openapi.held``).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from tenants.bulk_changes import CHANGE, CREATE, DELETE, SYSTEM, Actor, BulkChange, bulk_change_announce
from tenants.events import catalog_changed
from tenants.history.revisions import catalog_revision, history_note, history_record, note_deleted
from tenants.models import ChangePolicy, OpenApiSource, Secret, Tenant, Tool, secret_name_validator
from tenants.openapi.document import OpenApiDocument, OpenApiError
from tenants.openapi.held import openapi_import_held
from tenants.openapi.translate import MAX_OPERATIONS, ImportOptions, ToolPlan, document_translate
from tenants.outbound_auth import PERSONAL_AUTH_TYPES, auth_errors
from tenants.pinning.ledger import held_changes_forget
from tenants.validation import tool_validate

JSONObject = dict[str, Any]
MAX_REPORTED_CONFLICTS = 5


@dataclass
class ImportReport:
    source: OpenApiSource
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # The source holds changes: the tools whose addition, change or removal now waits for review.
    held: list[str] = field(default_factory=list)

    def summary(self) -> str:
        counts = (
            f"{self.source.name}: {len(self.created)} created, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.removed)} removed, {len(self.skipped)} skipped"
        )
        return f"{counts}, {len(self.held)} held for review" if self.held else counts


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _check_options(tenant: Tenant, options: ImportOptions, warnings: list[str]) -> None:
    if options.secret_name:
        try:
            secret_name_validator(options.secret_name)
        except ValidationError:
            raise OpenApiError(f"{options.secret_name!r} is not a secret name") from None
        if not Secret.objects.filter(tenant=tenant, name=options.secret_name).exists():
            warnings.append(f"the secret {options.secret_name!r} is not set yet: calls fail until it is")
    if len(options.prefix) > 64:
        raise OpenApiError("the prefix is longer than 64 characters")
    if options.personal is not None:
        problems = auth_errors(options.personal) if options.personal.get("type") in PERSONAL_AUTH_TYPES else []
        if options.personal.get("type") not in PERSONAL_AUTH_TYPES or "machine" in options.personal:
            problems.append("the tools act as each person only through a personal config (machine clients apart)")
        if problems:
            raise OpenApiError("acting as each person: " + " ".join(problems))
        client_secret = options.personal.get("secret")
        if client_secret and not Secret.objects.filter(tenant=tenant, name=client_secret).exists():
            warnings.append(f"the secret {client_secret!r} is not set yet: connecting fails until it is")


def _refusal(tool: Tool) -> str | None:
    """Why the tool validation (the admin's and the services' rules) refuses ``tool``, or None."""
    try:
        # The tenant and the source are this transaction's own rows, and the names were checked against the
        # tenant's tools (locked) and made unique within the document: only the per-tool rules run per tool.
        tool_validate(tool, keys_checked=True)
    except ValidationError as exc:
        return "the tool would be refused: " + "; ".join(
            f"{name}: {' '.join(messages)}" for name, messages in exc.message_dict.items()
        )
    return None


def openapi_import(
    *,
    tenant: Tenant,
    document: OpenApiDocument,
    options: ImportOptions,
    name: str = "",
    select: Collection[str] | None = None,
    max_operations: int = MAX_OPERATIONS,
    actor: Actor = SYSTEM,
    change_policy: str | None = None,
    withhold_incompatible: bool | None = None,
) -> ImportReport:
    """Store ``document``'s operations (those whose keys are in ``select``, or all) as the tools of its source;
    what was created, changed and removed is announced after commit as done by ``actor`` (``tenants.bulk_changes``).
    ``change_policy`` and ``withhold_incompatible`` set the source's (None: as they are). A re-import of a source that
    holds changes records them for review instead (``ImportReport.held``); a first import is its own approval.

    Raises ``OpenApiError`` and changes nothing when the document, an option or any one tool is refused.
    """
    translation = document_translate(document, options, max_operations=max_operations)
    plans = translation.tools
    offered = [plan.key for plan in plans]
    if not plans and translation.skipped:
        key, reason = translation.skipped[0]
        raise OpenApiError(f"no operation of {document.location} can become a tool ({key}: {reason})")
    if select is not None:
        wanted = set(select)
        unknown = sorted(wanted - {plan.key for plan in plans})
        if unknown:
            raise OpenApiError(f"no importable operation {unknown[0]!r} in {document.location}")
        plans = [plan for plan in plans if plan.key in wanted]
    warnings = list(translation.warnings)
    _check_options(tenant, options, warnings)
    with catalog_revision(user=actor.user_id):
        reimport = OpenApiSource.objects.filter(tenant=tenant, location=document.location).exists()
        source = _source_upsert(tenant, document, options, name, offered)
        _policy_set(source, change_policy, withhold_incompatible)
        report = ImportReport(source, skipped=translation.skipped, warnings=warnings)
        change = BulkChange(tenant_id=tenant.pk, operation="OpenAPI import", source=source.name, actor=actor)
        if reimport and source.change_policy == ChangePolicy.HOLD:
            _hold(tenant, source, plans, report)
        else:
            _store(tenant, source, plans, report, change)
            held_changes_forget(source=source)
            by = f" ({actor.label})" if actor.user_id is None else ""
            history_note(f"Imported OpenAPI source {report.summary()}{by}")
        if report.created or report.updated or report.removed:
            catalog_changed(tenant_id=tenant.pk, kind="tools")
        # Someone asked for this import: it is recorded even when it changed nothing.
        bulk_change_announce(change, when_empty=True)
    return report


@dataclass
class OperationDiff:
    """What importing one operation would do: ``added`` (a new tool), ``changed`` (``fields`` of its tool),
    ``unchanged``, or ``taken`` (its name is held by a tool this source did not make: it cannot be imported)."""

    key: str
    name: str
    status: str
    fields: list[str] = field(default_factory=list)
    # Imported now (a re-import ticks these by default: the source's own choice, read from the tools it made).
    imported: bool = False
    # Offered to tick at the source's last import (False for a first import; None: the source was imported before
    # the offers were kept).
    offered: bool | None = False

    @property
    def standing(self) -> str:
        """Where a re-import lists it: ``imported``; ``left_out`` (offered at the last import, not imported);
        ``new`` (not in the document then, or a first import); ``unknown`` (one of the two, not recorded which)."""
        if self.imported:
            return "imported"
        if self.offered is None:
            return "unknown"
        return "left_out" if self.offered else "new"


@dataclass
class ImportDiff:
    source: OpenApiSource | None
    operations: list[OperationDiff]
    # The source's tools an import of the selection removes: gone from the document, or no longer selected.
    removed: list[str]

    def of(self, status: str, selected: Collection[str]) -> list[OperationDiff]:
        return [op for op in self.operations if op.status == status and op.key in selected]

    def default_selection(self) -> list[str]:
        """A first import takes every operation it can; a re-import takes what the source imported before (an
        operation left out then, or new in the document, waits to be ticked)."""
        if self.source is None:
            return [op.key for op in self.operations if op.status != "taken"]
        return [op.key for op in self.operations if op.imported]

    def removed_by(self, selected: Collection[str]) -> list[str]:
        kept = {op.name for op in self.operations if op.key in selected and op.status != "taken"}
        return sorted(name for name in self.removed if name not in kept)


def openapi_import_diff(*, tenant: Tenant, location: str, plans: list[ToolPlan]) -> ImportDiff:
    """What importing ``plans`` (a translated document read from ``location``) into ``tenant`` would change, before
    anything is changed: per operation, and the source's tools that would go."""
    source = OpenApiSource.objects.filter(tenant=tenant, location=location).first()
    names = [plan.name for plan in plans]
    existing = {tool.name: tool for tool in Tool.objects.filter(tenant=tenant, name__in=names)}
    kept = source.offered_operations if source is not None else []
    offered = set(kept) if isinstance(kept, list) else None
    operations = []
    for plan in plans:
        tool = existing.get(plan.name)
        was_offered = plan.key in offered if offered is not None else None
        if tool is None:
            operations.append(OperationDiff(plan.key, plan.name, "added", offered=was_offered))
        elif source is None or tool.openapi_source_id != source.pk:  # type: ignore[attr-defined]
            operations.append(OperationDiff(plan.key, plan.name, "taken", offered=was_offered))
        else:
            changed = sorted(key for key, value in plan.fields.items() if not _same(getattr(tool, key), value))
            status = "changed" if changed else "unchanged"
            operations.append(OperationDiff(plan.key, plan.name, status, changed, imported=True, offered=was_offered))
    removed = sorted(Tool.objects.filter(openapi_source=source).values_list("name", flat=True)) if source else []
    return ImportDiff(source, operations, removed)


def _source_upsert(
    tenant: Tenant, document: OpenApiDocument, options: ImportOptions, name: str, offered: list[str]
) -> OpenApiSource:
    source = OpenApiSource.objects.select_for_update().filter(tenant=tenant, location=document.location).first()
    if source is None:
        source = OpenApiSource(tenant=tenant, location=document.location)
    source.name = (name or source.name or document.title or document.location)[:200]
    source.prefix = options.prefix
    source.base_url = options.base_url or ""
    source.secret_name = options.secret_name or ""
    source.client_id = options.client_id or ""
    source.document_sha256 = document.sha256
    source.imported_at = timezone.now()
    source.offered_operations = offered
    try:
        source.full_clean()
    except ValidationError as exc:
        raise OpenApiError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
    source.save()
    return source


def _policy_set(source: OpenApiSource, change_policy: str | None, withhold_incompatible: bool | None) -> None:
    if change_policy is not None and change_policy not in ChangePolicy.values:
        raise OpenApiError(f"{change_policy!r} is not a change policy ({', '.join(ChangePolicy.values)})")
    fields = {"change_policy": change_policy, "withhold_incompatible": withhold_incompatible}
    fields = {name: value for name, value in fields.items() if value is not None and getattr(source, name) != value}
    for name, value in fields.items():
        setattr(source, name, value)
    if fields:
        source.save(update_fields=list(fields))


def _ours(tenant: Tenant, source: OpenApiSource, names: list[str]) -> dict[str, Tool]:
    """The tenant's tools called ``names``, locked. Raises ``OpenApiError`` when one is not the source's own."""
    existing = {tool.name: tool for tool in Tool.objects.select_for_update().filter(tenant=tenant, name__in=names)}
    foreign = sorted(name for name, tool in existing.items() if tool.openapi_source_id != source.pk)  # type: ignore[attr-defined]
    if foreign:
        shown = ", ".join(foreign[:MAX_REPORTED_CONFLICTS]) + (" ..." if len(foreign) > MAX_REPORTED_CONFLICTS else "")
        raise OpenApiError(
            f"{len(foreign)} tool name(s) are taken by tools this source did not make: {shown}. "
            "Choose a prefix, or rename those tools"
        )
    return existing


def _hold(tenant: Tenant, source: OpenApiSource, plans: list[ToolPlan], report: ImportReport) -> None:
    _ours(tenant, source, [plan.name for plan in plans])
    proposals = [{"name": plan.name, **plan.fields} for plan in plans]
    skipped: list[tuple[str, str]] = []
    held = openapi_import_held(source=source, proposals=proposals, refusal=_refusal, skipped=skipped)
    by_name = {plan.name: plan.key for plan in plans}
    report.skipped.extend((by_name[name], reason) for name, reason in skipped)
    report.held, report.unchanged = held.held, held.unchanged + held.rejected


def _store(
    tenant: Tenant, source: OpenApiSource, plans: list[ToolPlan], report: ImportReport, change: BulkChange
) -> None:
    names = [plan.name for plan in plans]
    existing = _ours(tenant, source, names)
    creating: list[Tool] = []
    updating: list[Tool] = []
    changed_fields: set[str] = set()
    kept: list[str] = []
    for plan in plans:
        tool = existing.get(plan.name)
        if tool is None:
            tool = Tool(tenant=tenant, name=plan.name, **plan.fields)
            tool.openapi_source = source  # type: ignore[attr-defined]
            changed = set(plan.fields)
        else:
            changed = {key for key, value in plan.fields.items() if not _same(getattr(tool, key), value)}
            for key in changed:
                setattr(tool, key, plan.fields[key])
            tool.updated_at = timezone.now()  # bulk_update does not apply auto_now
        # One operation the rules refuse (an odd schema, a header name HTTP forbids) is skipped like any other
        # operation that cannot become a tool; it does not hold back the rest of the document.
        refusal = _refusal(tool) if changed else None
        if refusal is not None:
            report.skipped.append((plan.key, refusal))
            continue
        kept.append(plan.name)
        if tool.pk is None:
            creating.append(tool)
            report.created.append(plan.name)
        elif changed:
            updating.append(tool)
            changed_fields |= changed
            report.updated.append(plan.name)
        else:
            report.unchanged.append(plan.name)
    vanished = Tool.objects.filter(openapi_source=source).exclude(name__in=kept).order_by("name")
    for tool in vanished:
        change.add(DELETE, tool)
    report.removed = change.names(DELETE)
    vanished.delete()
    try:
        with transaction.atomic():
            Tool.objects.bulk_create(creating, batch_size=500)
    except IntegrityError:
        raise OpenApiError("another tool with one of these names was saved meanwhile; import again") from None
    if updating:
        Tool.objects.bulk_update(updating, [*sorted(changed_fields), "updated_at"], batch_size=500)
    for tool in creating:
        change.add(CREATE, tool)
    for tool in updating:
        change.add(CHANGE, tool)
    # Bulk writes send no post_save: each tool the import added or changed joins the import's revision here.
    for tool in (*creating, *updating):
        history_record(tool)


def openapi_source_delete(*, source: OpenApiSource) -> None:
    """Delete a source with the tools it made; clients hear of it after commit."""
    with catalog_revision():
        had_tools = Tool.objects.filter(openapi_source=source).exists()
        tenant_id = source.tenant_id
        note_deleted(source)
        source.delete()
        if had_tools:
            catalog_changed(tenant_id=tenant_id, kind="tools")
