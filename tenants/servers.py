"""Writes to servers within a tenant (a curated selection of the tenant's catalog served at its own URL): validated,
stored in a ``catalog_revision`` (the history keeps each version), announced after commit like a catalog change. The
selection's rules are ``tenants.selection``'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from tenants.events import server_changed
from tenants.history.revisions import catalog_revision, note_added, note_change, note_deleted
from tenants.models import RESERVED_SERVER_SLUGS, OpenApiSource, Server, Tenant, Upstream
from tenants.selection import OPENAPI, UPSTREAM, selection_errors, selection_parse

SERVER_FIELDS = frozenset({"slug", "title", "instructions", "selection", "required_scopes", "enabled"})


def _save(server: Server, update_fields: list[str] | None = None) -> None:
    try:
        with transaction.atomic():
            server.save(update_fields=update_fields)
    except IntegrityError as exc:
        # full_clean checked the slug; only a concurrent save of the same one gets here.
        raise ValidationError({"slug": ["Another server with this slug was saved meanwhile."]}) from exc


def server_validate(server: Server) -> None:
    """Raise ``ValidationError`` (by field) unless ``server`` may be stored: a slug no endpoint uses, a well-formed
    selection whose sources are the tenant's own."""
    errors: dict[str, list[str]] = {}
    try:
        server.full_clean()
    except ValidationError as exc:
        errors.update({field: list(messages) for field, messages in exc.message_dict.items()})
    if server.slug in RESERVED_SERVER_SLUGS:
        errors.setdefault("slug", []).append(f"{server.slug!r} names an endpoint; choose another name.")
    problems = selection_errors(server.selection)
    if problems:
        errors.setdefault("selection", []).extend(problems)
    elif server.tenant_id is not None:
        selection = selection_parse(server.selection)
        for model, ids, what in (
            (Upstream, selection.upstreams, UPSTREAM),
            (OpenApiSource, selection.openapi_sources, OPENAPI),
        ):
            found = set(
                model._default_manager.filter(tenant_id=server.tenant_id, pk__in=ids).values_list("pk", flat=True)
            )
            for missing in sorted(ids - found):
                errors.setdefault("selection", []).append(f"{what}:{missing} is no source of this tenant.")
    if errors:
        raise ValidationError(errors)


def server_create(
    *,
    tenant: Tenant,
    slug: str,
    title: str = "",
    instructions: str = "",
    selection: list[str] | None = None,
    required_scopes: str = "",
    enabled: bool = True,
) -> Server:
    """Add a server to the tenant. Raises ``ValidationError``."""
    server = Server(
        tenant=tenant,
        slug=slug,
        title=title,
        instructions=instructions,
        selection=list(selection or []),
        required_scopes=required_scopes,
        enabled=enabled,
    )
    with catalog_revision():
        server_validate(server)
        _save(server)
        note_added(server)
        server_changed(tenant_id=tenant.pk)
    return server


def server_update(*, server: Server, data: Mapping[str, Any]) -> Server:
    """Change the server's fields (``SERVER_FIELDS``). Raises ``ValidationError``, leaving ``server`` unchanged."""
    unknown = sorted(set(data) - SERVER_FIELDS)
    if unknown:
        raise ValidationError({field: ["This field cannot be changed here."] for field in unknown})
    previous = {field: getattr(server, field) for field in data}
    changed = [field for field, value in data.items() if previous[field] != value]
    if not changed:
        return server
    for field in changed:
        setattr(server, field, data[field])
    try:
        with catalog_revision():
            server_validate(server)
            _save(server, update_fields=[*sorted(changed), "updated_at"])
            note_change(server, changed)
            server_changed(tenant_id=server.tenant_id)
    except ValidationError:
        for field in changed:
            setattr(server, field, previous[field])
        raise
    return server


def server_delete(*, server: Server) -> None:
    """Remove the server (its versions stay: it can be recovered)."""
    with catalog_revision():
        tenant_id = server.tenant_id
        note_deleted(server)
        server.delete()
        server_changed(tenant_id=tenant_id)
