"""Applying a file: its plan carried out through the services, in one transaction, so list_changed, the tenant's
revision, the admin's history and the activity log see each change as they see an admin's edit.

What needs the network comes first, outside the transaction: the catalogs of the upstreams the file adds, the
OpenAPI documents it imports. Then, under a lock on the tenant's row, the plan is made again from the database
(it must be the plan that was read: ``PlanChanged`` otherwise), carried out (settings; removals; upstreams and
OpenAPI sources; items; servers, their selections' sources named by id as they are now; rate limits), and the file's
objects are recorded as managed. Any refusal rolls everything
back. Upstreams whose connection or items changed are refreshed after the commit, as the admin does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync
from django.core.exceptions import ValidationError

from mcp_platform.catalog_files.checks import UPSTREAM_REFRESHED_FIELDS, items_uncertain, items_unknown
from mcp_platform.catalog_files.loading import ConfigFileError, LoadedFile, Problem
from mcp_platform.catalog_files.planning import Change, Proposal, configuration_plan
from mcp_platform.catalog_files.sections import (
    OPENAPI_SOURCES,
    PERIOD_SECONDS,
    PROMPTS,
    RATE_LIMITS,
    RESOURCE_TEMPLATES,
    RESOURCES,
    SECTIONS,
    SECTIONS_BY_NAME,
    SERVERS,
    TOOLS,
    UPSTREAMS,
)
from mcp_platform.catalog_files.selections import selection_stored
from mcp_platform.catalog_files.state import managed_record
from mcp_platform.quotas import services as quotas
from tenants import services
from tenants.bulk_changes import CHANGE, CREATE, DELETE, Actor, BulkChange, bulk_change_announce
from tenants.federation.connection import UpstreamConnection, UpstreamFailure, UpstreamTarget
from tenants.federation.mirror import Listing
from tenants.federation.services import (
    upstream_delete,
    upstream_discover,
    upstream_items_update,
    upstream_refresh,
    upstream_store,
    upstream_update,
)
from tenants.history.revisions import catalog_revision
from tenants.models import Server, Tenant, Upstream
from tenants.openapi.document import OpenApiDocument, OpenApiError, document_parse
from tenants.openapi.fetching import document_fetch_once, document_read
from tenants.openapi.importing import openapi_import, openapi_source_delete
from tenants.openapi.servers import is_web_url
from tenants.openapi.translate import ImportOptions, document_translate
from tenants.servers import server_create, server_delete, server_update

JSONObject = dict[str, Any]
OPERATION = "configuration file"
# What an upstream's row takes from the file, and what its items page takes (``upstream_items_update``).
UPSTREAM_ROW_FIELDS = ("url", "prefix", "auth", "enabled", "session_mode", "change_policy", "withhold_incompatible")
UPSTREAM_ITEM_FIELDS = ("excluded", "overrides")
# How long a refresh after the apply may wait on an upstream.
REFRESH_SECONDS = 30.0


class PlanChanged(Exception):
    """The plan made at the apply differs from the one that was read: nothing was changed; ``proposal`` is new."""

    def __init__(self, proposal: Proposal) -> None:
        super().__init__("the tenant or the file changed since the plan was made: read the new plan")
        self.proposal = proposal


@dataclass
class ApplyReport:
    """What an apply did: its plan, and notes (items a source could not serve, refreshes that failed)."""

    proposal: Proposal
    notes: list[str] = field(default_factory=list)


@dataclass
class _Fetched:
    """What the apply read from the network before its transaction: new upstreams' catalogs, by name; documents to
    import and the operations selected in them, by location."""

    catalogs: dict[str, tuple[Listing, UpstreamConnection]] = field(default_factory=dict)
    documents: dict[str, tuple[OpenApiDocument, list[str]]] = field(default_factory=dict)


def _source_options(fields: JSONObject) -> ImportOptions:
    return ImportOptions(
        prefix=fields["prefix"],
        base_url=fields["base_url"] or None,
        secret_name=fields["secret_name"] or None,
        client_id=fields["client_id"] or None,
    )


def _document(proposal: Proposal, fields: JSONObject) -> tuple[OpenApiDocument, list[str]]:
    """The OpenAPI document of a source the file imports, and the keys of the operations that become its tools."""
    location = str(fields["location"])
    tenant_id = proposal.tenant.pk
    content = async_to_sync(document_fetch_once)(location, tenant_id=tenant_id) if is_web_url(location) else None
    document = document_parse(content if content is not None else document_read(location), location=location)
    plans = document_translate(document, _source_options(fields)).tools
    keys = {plan.name: plan.key for plan in plans}
    unknown = [name for name in fields["tools"] if name not in keys]
    if unknown:
        raise OpenApiError(
            f"no operation of the document becomes the tool {unknown[0]!r} (with the prefix {fields['prefix']!r}); "
            f"it offers {', '.join(sorted(keys)[:8]) or 'none'}{' …' if len(keys) > 8 else ''}"
        )
    return document, [keys[name] for name in fields["tools"]]


def _fetch(proposal: Proposal) -> _Fetched:
    """Read what the apply needs from the network. Raises ``ConfigFileError`` (with the entry's line)."""
    fetched = _Fetched()
    problems: list[Problem] = []
    loaded = proposal.loaded
    for change in proposal.plan.changes:
        if change.action == "remove" or change.section not in SECTIONS_BY_NAME:
            continue
        entry = proposal.desired.sections[change.section][change.key]
        where = (change.section, entry.index or 0)
        if change.section == UPSTREAMS.name and change.action == "add" and entry.fields["enabled"]:
            upstream = Upstream(tenant=proposal.tenant, **entry.fields)
            try:
                fetched.catalogs[change.key] = async_to_sync(upstream_discover)(UpstreamTarget.of(upstream))
            except UpstreamFailure as exc:
                problems.append(loaded.problem(where, f"could not add the upstream: {exc}"))
        elif change.section == OPENAPI_SOURCES.name and (change.action == "add" or change.fields):
            try:
                fetched.documents[change.key] = _document(proposal, entry.fields)
            except OpenApiError as exc:
                problems.append(loaded.problem(where, f"could not import the document: {exc}"))
    if problems:
        raise ConfigFileError(problems)
    return fetched


class _Run:
    """One apply inside its transaction: each change through its service, and the rows it touched for the
    records (``BulkChange``)."""

    def __init__(self, proposal: Proposal, fetched: _Fetched, actor: Actor, source: str) -> None:
        self.proposal = proposal
        self.tenant = proposal.tenant
        self.fetched = fetched
        self.actor = actor
        self.record = BulkChange(tenant_id=self.tenant.pk, operation=OPERATION, source=source, actor=actor)
        self.notes: list[str] = []
        self.refresh: list[int] = []

    def fields(self, change: Change) -> JSONObject:
        return self.proposal.desired.sections[change.section][change.key].fields

    def row(self, change: Change) -> Any:
        return self.proposal.current.sections[change.section][change.key].row

    def changed(self, change: Change, names: tuple[str, ...] | None = None) -> JSONObject:
        fields = self.fields(change)
        return {f.field: fields[f.field] for f in change.fields if names is None or f.field in names}

    def run(self) -> None:
        changes = self.proposal.plan.changes
        for change in changes:
            if change.section == "settings":
                services.tenant_update(tenant=self.tenant, data={f.field: f.after for f in change.fields})
                self.record.add(CHANGE, self.tenant)
        # Removals first, so that a name or URI the file moves from one object to another is free.
        for section in reversed(SECTIONS):
            for change in changes:
                if change.section == section.name and change.action == "remove":
                    self.step(change, self.remove)
        for section in (
            UPSTREAMS,
            OPENAPI_SOURCES,
            TOOLS,
            RESOURCES,
            RESOURCE_TEMPLATES,
            PROMPTS,
            SERVERS,
            RATE_LIMITS,
        ):
            if section is SERVERS:
                self.servers_checked()
            for change in changes:
                if change.section == section.name and change.action != "remove":
                    self.step(change, self.write)

    def servers_checked(self) -> None:
        """The items the plan left for now (an upstream the file adds or changes may bring them) must be there, once
        the sources and items are written; not when an upstream's new address, prefix or credentials are read only at
        the refresh after the apply."""
        proposal = self.proposal
        refreshed = items_uncertain(proposal.desired, proposal.current, fields=UPSTREAM_REFRESHED_FIELDS, added=False)
        if not proposal.unchecked or refreshed:
            return
        problems = items_unknown(tenant=self.tenant, loaded=proposal.loaded, unchecked=proposal.unchecked)
        if problems:
            raise ConfigFileError(problems)

    def step(self, change: Change, do: Callable[[Change], None]) -> None:
        """Run one change; a refusal (a write raced by another, an upstream's items now taken) ends the apply."""
        try:
            do(change)
        except (ValidationError, OpenApiError) as exc:
            messages = " ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
            entry = self.proposal.desired.sections.get(change.section, {}).get(change.key)
            path: tuple[str | int, ...] = (change.section, entry.index or 0) if entry is not None else ()
            noun = SECTIONS_BY_NAME[change.section].noun
            raise ConfigFileError(
                [self.proposal.loaded.problem(path, f"the {noun} {change.key!r} could not be written: {messages}")]
            ) from None

    def remove(self, change: Change) -> None:
        row = self.row(change)
        self.record.add(DELETE, row)
        REMOVERS[change.section](row)

    def write(self, change: Change) -> None:
        if change.action != "add" and not change.fields:
            return  # taken over as it is: only recorded as managed
        if change.section == UPSTREAMS.name:
            self.upstream(change)
        elif change.section == OPENAPI_SOURCES.name:
            self.openapi_source(change)
        elif change.action == "add":
            self.record.add(CREATE, CREATORS[change.section](self.tenant, self.fields(change)))
        else:
            row = self.row(change)
            UPDATERS[change.section](row, self.changed(change))
            self.record.add(CHANGE, row)

    def upstream(self, change: Change) -> None:
        fields = self.fields(change)
        if change.action == "add":
            upstream = Upstream(tenant=self.tenant, **fields)
            report = upstream_store(
                upstream=upstream, discovered=self.fetched.catalogs.get(change.key), actor=self.actor
            )
            self.record.add(CREATE, upstream)
            self.notes.extend(f"upstream {upstream.name}: {reason}" for reason in report.skipped)
            return
        row: Upstream = self.row(change)
        data = self.changed(change, UPSTREAM_ROW_FIELDS)
        if data:
            upstream_update(upstream=row, data=data)
        if self.changed(change, UPSTREAM_ITEM_FIELDS):
            report = upstream_items_update(
                upstream=row, excluded=fields["excluded"], overrides=fields["overrides"], actor=self.actor
            )
            self.notes.extend(f"upstream {row.name}: {reason}" for reason in report.skipped)
        self.record.add(CHANGE, row)
        if row.enabled:
            self.refresh.append(row.pk)

    def openapi_source(self, change: Change) -> None:
        fields = self.fields(change)
        document, selected = self.fetched.documents[change.key]
        report = openapi_import(
            tenant=self.tenant,
            document=document,
            options=_source_options(fields),
            name=fields["name"],
            select=selected,
            actor=self.actor,
            change_policy=fields["change_policy"],
            withhold_incompatible=fields["withhold_incompatible"],
        )
        self.record.add(CREATE if change.action == "add" else CHANGE, report.source)
        self.notes.extend(f"OpenAPI source {fields['name']}: {key} skipped: {why}" for key, why in report.skipped)
        self.notes.extend(f"OpenAPI source {fields['name']}: {warning}" for warning in report.warnings)


def _limit_values(tenant: Tenant, fields: JSONObject) -> JSONObject:
    """A limit's fields from the file as the services take them: the period in seconds, the server as its row."""
    values = dict(fields)
    if "period" in values:
        values["period"] = PERIOD_SECONDS[values["period"]]
    if "server" in values:
        slug = values["server"]
        values["server"] = Server.objects.get(tenant=tenant, slug=slug) if slug else None
    return values


def _server_values(tenant: Tenant, fields: JSONObject) -> JSONObject:
    """A server's fields from the file as the services take them: its selection's sources by id."""
    values = dict(fields)
    if "selection" in values:
        values["selection"] = selection_stored(tenant=tenant, selection=values["selection"])
    return values


CREATORS: dict[str, Callable[[Tenant, JSONObject], Any]] = {
    TOOLS.name: lambda tenant, fields: services.tool_create(tenant=tenant, **fields),
    RESOURCES.name: lambda tenant, fields: services.resource_create(tenant=tenant, **fields),
    RESOURCE_TEMPLATES.name: lambda tenant, fields: services.resource_template_create(tenant=tenant, **fields),
    PROMPTS.name: lambda tenant, fields: services.prompt_create(tenant=tenant, **fields),
    SERVERS.name: lambda tenant, fields: server_create(tenant=tenant, **_server_values(tenant, fields)),
    RATE_LIMITS.name: lambda tenant, fields: quotas.rate_limit_create(tenant=tenant, **_limit_values(tenant, fields)),
}
UPDATERS: dict[str, Callable[[Any, JSONObject], Any]] = {
    TOOLS.name: lambda row, data: services.tool_update(tool=row, data=data),
    RESOURCES.name: lambda row, data: services.resource_update(resource=row, data=data),
    RESOURCE_TEMPLATES.name: lambda row, data: services.resource_template_update(template=row, data=data),
    PROMPTS.name: lambda row, data: services.prompt_update(prompt=row, data=data),
    SERVERS.name: lambda row, data: server_update(server=row, data=_server_values(row.tenant, data)),
    RATE_LIMITS.name: lambda row, data: quotas.rate_limit_update(limit=row, data=_limit_values(row.tenant, data)),
}
REMOVERS: dict[str, Callable[[Any], None]] = {
    TOOLS.name: lambda row: services.tool_delete(tool=row),
    RESOURCES.name: lambda row: services.resource_delete(resource=row),
    RESOURCE_TEMPLATES.name: lambda row: services.resource_template_delete(template=row),
    PROMPTS.name: lambda row: services.prompt_delete(prompt=row),
    UPSTREAMS.name: lambda row: upstream_delete(upstream=row),
    OPENAPI_SOURCES.name: lambda row: openapi_source_delete(source=row),
    SERVERS.name: lambda row: server_delete(server=row),
    RATE_LIMITS.name: lambda row: quotas.rate_limit_delete(limit=row),
}


def configuration_apply(
    *,
    tenant: Tenant,
    loaded: LoadedFile,
    actor: Actor,
    source: str = "",
    reviewed: str | None = None,
    files_allowed: bool = False,
) -> ApplyReport:
    """Apply ``loaded`` (checked by ``planning.file_check``) to ``tenant``, as ``actor``; ``source`` names the file
    in the records. ``reviewed``: the digest of the plan the person read (the admin's Apply button).

    Raises ``ConfigFileError`` (nothing changed: the file's problems, or a refusal while writing, by line) and
    ``PlanChanged`` (nothing changed: the plan made now is not the one that was reviewed).
    """
    proposal = configuration_plan(tenant=tenant, loaded=loaded, files_allowed=files_allowed)
    if reviewed is not None and proposal.plan.digest() != reviewed:
        raise PlanChanged(proposal)
    fetched = _fetch(proposal)
    # One transaction, and one revision of the catalog's history: restoring what an apply changed is one action.
    with catalog_revision(user=actor.user_id, comment=f"Applied {source or 'a configuration file'}"):
        locked = Tenant.objects.select_for_update().get(pk=tenant.pk)
        again = configuration_plan(tenant=locked, loaded=loaded, files_allowed=files_allowed)
        if again.plan.digest() != proposal.plan.digest():
            raise PlanChanged(again)
        run = _Run(again, fetched, actor, source or f"the file for {locked.slug}")
        run.run()
        managed_record(tenant=locked, keys={section.name: list(again.desired.entries(section)) for section in SECTIONS})
        bulk_change_announce(run.record)
    report = ApplyReport(again, run.notes)
    for upstream_id in run.refresh:
        try:
            async_to_sync(upstream_refresh)(upstream_id, pooled=False, actor=actor, timeout=REFRESH_SECONDS)
        except (UpstreamFailure, ValidationError) as exc:
            text = str(exc) if isinstance(exc, UpstreamFailure) else " ".join(exc.messages)
            report.notes.append(f"refreshing an upstream after the apply failed (the schedule will retry): {text}")
    tenant.refresh_from_db()
    return report


def file_label(path: str) -> str:
    """How the records name a file: its name, without the directories of the machine it was read on."""
    return Path(path).name or path
