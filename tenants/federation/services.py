"""Every write to upstream MCP servers: add (connect, discover and mirror before returning), change, remove,
refresh their mirrored catalogs (on their list_changed, on a schedule, on demand), and approve or reject the changes
an upstream that holds them proposed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from mcp_core.uris import uri_scheme
from tenants.bulk_changes import SCHEDULED_REFRESH, SYSTEM, UPSTREAM_NOTICE, Actor
from tenants.connections.credentials import acts_as_person, catalog_readable
from tenants.events import CATALOG_KINDS, catalog_changed, tenant_changed
from tenants.federation.backend import set_session_marker
from tenants.federation.connection import CONNECT_TIMEOUT, UpstreamConnection, UpstreamFailure, UpstreamTarget
from tenants.federation.mirror import Listing, MirrorReport, listing_fetch, listing_stored, mirror_apply
from tenants.federation.overrides import overrides_errors
from tenants.federation.pool import upstream_pool
from tenants.history.revisions import (
    catalog_revision,
    history_note,
    history_record,
    note_added,
    note_change,
    note_deleted,
)
from tenants.models import ChangePolicy, PendingChange, Tenant, Upstream
from tenants.outbound_auth import auth_errors
from tenants.pinning.ledger import ChangesDecided, held_changes_note, pending_as_seen, pending_reject

logger = logging.getLogger(__name__)

JSONObject = dict[str, Any]
UPSTREAM_FIELDS = frozenset(
    {
        *("name", "url", "prefix", "auth", "enabled", "excluded", "session_mode", "session_tools"),
        *("change_policy", "withhold_incompatible"),
    }
)
# Changing one of these changes what a connection is (or which one a tool takes): pooled sessions of the old
# revision are dropped.
CONNECTION_FIELDS = frozenset({"url", "auth", "enabled", "session_mode"})
# Read with the cached tool definitions (which carry their upstream row): a change makes every process read again.
CACHED_FIELDS = CONNECTION_FIELDS | {"session_tools"}
# The HTTP tools' auth shapes, less the API key in the query (an MCP endpoint's URL carries no credentials).
UPSTREAM_AUTH_TYPES = ("bearer", "header", "basic", "client_credentials")


def _upstream_auth_errors(auth: Any) -> list[str]:
    machine = auth.get("machine") if isinstance(auth, dict) else None
    if any(isinstance(config, dict) and config.get("type") == "query" for config in (auth, machine)):
        return ['An upstream authenticates with "bearer", "header", "basic" or "client_credentials".']
    if isinstance(auth, dict) and auth.get("type") == "user_key" and auth.get("placement") == "query":
        return ["An upstream takes a person's key as a bearer token or in a header, not in the query."]
    # The authorization server of an upstream that acts as each person is discovered (RFC 9728) where none is named.
    return auth_errors(auth, issuer_required=False)


def upstream_validate(upstream: Upstream) -> None:
    """Raise ``ValidationError`` unless ``upstream`` may be stored (its reachability is checked by connecting)."""
    errors: dict[str, list[str]] = {}
    try:
        upstream.full_clean()
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if uri_scheme(upstream.url) not in ("http", "https"):
        errors.setdefault("url", []).append("The URL must start with https:// (or http://).")
    problems = _upstream_auth_errors(upstream.auth)
    if problems:
        errors.setdefault("auth", []).extend(problems)
    if not isinstance(upstream.excluded, list) or not all(isinstance(e, str) for e in upstream.excluded):
        errors.setdefault("excluded", []).append('Excluded items must be a list such as ["tools:<name>"].')
    if not isinstance(upstream.session_tools, list) or not all(isinstance(t, str) for t in upstream.session_tools):
        errors.setdefault("session_tools", []).append('Session tools must be a list of tool names such as ["ask"].')
    if errors:
        raise ValidationError(errors)


async def upstream_discover(target: UpstreamTarget) -> tuple[Listing, UpstreamConnection]:
    """Connect once (not pooled), read everything the upstream offers, close. Raises ``UpstreamFailure``."""
    connection = UpstreamConnection(target)
    await connection.open()
    try:
        return await listing_fetch(connection), connection
    except Exception as exc:
        raise connection.failure(exc) from None
    finally:
        await connection.close()


def upstream_add(
    *,
    tenant: Tenant,
    name: str,
    url: str,
    prefix: str | None = None,
    auth: JSONObject | None = None,
    actor: Actor = SYSTEM,
    session_mode: str = Upstream.SessionMode.AUTO,
    change_policy: str = ChangePolicy.ACCEPT,
    withhold_incompatible: bool = False,
) -> tuple[Upstream, MirrorReport]:
    """Add an upstream and mirror its catalog before returning (prefix: ``<name>_`` when None); ``actor`` added it.
    What it offers now is approved by adding it, whatever its ``change_policy`` (which governs its later changes).

    Raises ``ValidationError`` for bad input or items that cannot be stored and ``UpstreamFailure`` when the
    upstream cannot be reached; either way nothing is stored.
    """
    upstream = Upstream(
        tenant=tenant,
        name=name,
        url=url,
        prefix=f"{name}_" if prefix is None else prefix,
        auth=auth,
        session_mode=session_mode,
        change_policy=change_policy,
        withhold_incompatible=withhold_incompatible,
    )
    upstream_validate(upstream)
    # An upstream that acts as each person, with no shared credentials for machine clients, has nobody to read its
    # catalog as yet: it is stored as it is, and read as soon as a member connects (``upstream_first_reader``).
    unreadable = acts_as_person(auth) and not isinstance((auth or {}).get("machine"), dict)
    discovered = None if unreadable else async_to_sync(upstream_discover)(UpstreamTarget.of(upstream))
    report = upstream_store(upstream=upstream, discovered=discovered, actor=actor)
    upstream.refresh_from_db()
    return upstream, report


def upstream_store(
    *,
    upstream: Upstream,
    discovered: tuple[Listing, UpstreamConnection] | None,
    actor: Actor = SYSTEM,
) -> MirrorReport:
    """Store a new ``upstream`` (checked by ``upstream_validate``; its exclusions and overrides by
    ``overrides_errors``) with the catalog ``upstream_discover`` read from it, mirrored in the same transaction.
    ``discovered`` None: a disabled upstream, or one that acts as each person with nobody to read it as yet, stored
    without connecting; its first refresh after it is enabled (after a member connects) mirrors it. For callers that
    connect before their own transaction (``upstream_add``, a configuration file's apply).

    Raises ``ValidationError`` when another upstream of that name was added meanwhile.
    """
    try:
        with catalog_revision(user=actor.user_id):
            if discovered is not None:
                connection = discovered[1]
                upstream.transport, upstream.protocol_version = connection.transport, connection.protocol_version
                upstream.last_ok_at = timezone.now()
            upstream.save()
            note_added(upstream)
            listing = discovered[0] if discovered is not None else Listing()
            report = mirror_apply(
                upstream=upstream,
                listing=listing,
                actor=actor,
                operation="upstream added",
                refreshed=bool(discovered),
                # What it offers when added is approved by adding it, whatever its change policy.
                approve_all=True,
            )
    except IntegrityError as exc:
        raise ValidationError(f"Another upstream called {upstream.name!r} was added meanwhile.") from exc
    return report


def upstream_update(*, upstream: Upstream, data: Mapping[str, Any]) -> Upstream:
    """Change an upstream's settings; a changed prefix or exclusion list takes effect at the next refresh (the
    admin runs one at once). Raises ``ValidationError``."""
    unknown = sorted(set(data) - UPSTREAM_FIELDS)
    if unknown:
        raise ValidationError({field: ["This field cannot be changed here."] for field in unknown})
    previous = {field: getattr(upstream, field) for field in data}
    for field, value in data.items():
        setattr(upstream, field, value)
    try:
        upstream_validate(upstream)
    except ValidationError:
        for field, value in previous.items():
            setattr(upstream, field, value)
        raise
    changed = {field for field in data if previous[field] != data[field]}
    if changed & CONNECTION_FIELDS:
        upstream.revision += 1
    with catalog_revision():
        upstream.save()
        note_change(upstream, changed)
        if changed & CACHED_FIELDS:
            # Cached tool and prompt definitions carry their upstream row: a new revision makes every process read
            # them again, so calls use the new URL or credentials (a disabled upstream's calls fail, saying so).
            tenant_changed(tenant_id=upstream.tenant_id)
    return upstream


def upstream_items_update(
    *, upstream: Upstream, excluded: list[str], overrides: Mapping[str, Mapping[str, str]], actor: Actor = SYSTEM
) -> MirrorReport:
    """Store which of the upstream's items are left out and the names and descriptions the tenant gives the others
    (``Upstream.overrides``; an empty value follows the upstream), and apply them to the mirrored rows at once,
    without connecting: an item served again appears at the next refresh. ``actor`` made the change.

    ``overrides`` is the whole truth for names and descriptions: an item's name or description edited on its own
    page and not given here goes back to the upstream's.

    Raises ``ValidationError`` by item key (``"tools:echo"``) when a name breaks the catalog's rule or is taken.
    """
    if not isinstance(overrides, Mapping):
        raise ValidationError({"overrides": ["Overrides must be an object."]})
    # An empty value follows the upstream: it is not stored.
    cleaned = {
        key: {field: value for field, value in entry.items() if value} if isinstance(entry, Mapping) else entry
        for key, entry in overrides.items()
        if not isinstance(entry, Mapping) or any(entry.values())
    }
    errors = overrides_errors(upstream=upstream, excluded=excluded, overrides=cleaned)
    if errors:
        raise ValidationError(errors)
    with catalog_revision(user=actor.user_id):
        stored = Upstream.objects.select_for_update().select_related("tenant").get(pk=upstream.pk)
        changed = {
            name
            for name, value in (("excluded", list(excluded)), ("overrides", cleaned))
            if getattr(stored, name) != value
        }
        stored.excluded, stored.overrides = list(excluded), cleaned
        stored.save(update_fields=["excluded", "overrides", "updated_at"])
        note_change(stored, changed)
        report = mirror_apply(
            upstream=stored,
            listing=listing_stored(stored),
            actor=actor,
            operation="upstream items changed",
            refreshed=False,
            overrides_only=True,
        )
    upstream.excluded, upstream.overrides = stored.excluded, stored.overrides
    return report


def upstream_changes_decide(
    *, upstream: Upstream, seen: Mapping[str, str], approve: bool, actor: Actor = SYSTEM
) -> ChangesDecided:
    """Approve (``approve``) or reject the pending changes of ``upstream`` that ``seen`` names, by item key, each with
    the digest of the proposal the admin saw: a change whose proposal moved since is left for another look.

    Approving writes the proposed definitions through the mirror, hence the services (clients hear list_changed, every
    process drops its cached catalog); a removal deletes the tool. Rejecting keeps the approved definitions (a tool
    withheld for an incompatible schema is served again; a removed one stays withheld) and remembers each proposal,
    so the same one is not raised again (a different one is). No network: the upstream was read at its last refresh.

    A decision is a revision of the catalog's history on the upstream (its mirrored tools have no versions of their
    own), by ``actor``, saying what was decided.
    """
    with catalog_revision(user=actor.user_id):
        stored = Upstream.objects.select_for_update().select_related("tenant").get(pk=upstream.pk)
        changes, moved = pending_as_seen(source=stored, seen=seen)
        decided = [] if approve else pending_reject(changes=changes, user_id=actor.user_id)
        # Approved: applied through the mirror. Rejected: what was withheld for want of a decision is served again.
        report = mirror_apply(
            upstream=stored,
            listing=listing_stored(stored),
            actor=actor,
            operation=f"upstream changes {'approved' if approve else 'rejected'}",
            refreshed=False,
            approving={c.item_key for c in changes} if approve else (),
        )
        if approve:
            # An approved change the catalog refuses is skipped by the mirror (the report says why) and stays pending.
            left = set(PendingChange.objects.filter(pk__in=[c.pk for c in changes]).values_list("pk", flat=True))
            decided = [c for c in changes if c.pk not in left]
        if decided:
            history_note(held_changes_note(stored, decided, approved=approve))
            history_record(stored, always=True)
    return ChangesDecided(decided=decided, moved=moved, refused=list(report.skipped))


def upstream_tool_needs_session(*, upstream: Upstream, remote: str) -> None:
    """Record that the upstream's tool ``remote`` asks imperatively (its upstream refused a server-to-client request
    on 2026-07-28): in automatic mode it is called in a handshake session from now on, on every process. ``upstream``
    (the caller's copy, e.g. a cached row) is updated too, so this process switches at once."""
    with transaction.atomic():
        stored = Upstream.objects.select_for_update().filter(pk=upstream.pk).first()
        if stored is None:
            return
        if remote not in stored.session_tools:
            stored.session_tools = [*stored.session_tools, remote]
            # No revision bump: the upstream's connections stay as they are; only which one this tool takes changes.
            stored.save(update_fields=["session_tools", "updated_at"])
            # Cached tool definitions carry their upstream row: every process reads them again.
            tenant_changed(tenant_id=stored.tenant_id)
    upstream.session_tools = stored.session_tools
    logger.info("upstream %s: tool %s needs a session, and is called in one from now on", upstream.name, remote)


def upstream_delete(*, upstream: Upstream) -> None:
    """Remove an upstream and everything mirrored from it (its versions stay: it can be recovered)."""
    with catalog_revision():
        note_deleted(upstream)
        for kind in CATALOG_KINDS:
            catalog_changed(tenant_id=upstream.tenant_id, kind=kind)
        upstream.delete()


async def upstream_refresh(
    upstream_id: int, *, pooled: bool = True, actor: Actor = SCHEDULED_REFRESH, timeout: float | None = None
) -> MirrorReport | None:
    """Re-read the upstream's catalog and mirror it (None when the upstream is disabled or gone); ``actor`` asked
    for the refresh (an admin, a command, the schedule).

    ``pooled``: over this process's pooled session (web processes); otherwise over a connection of its own
    (Celery, commands). ``timeout``: seconds the reading may take (a page waiting on it). Raises
    ``UpstreamFailure`` and ``ValidationError`` (recorded as its last error too).
    """
    upstream = await Upstream.objects.select_related("tenant").filter(pk=upstream_id).afirst()
    if upstream is None or not upstream.enabled:
        return None
    personal = upstream.auth if acts_as_person(upstream.auth) else None
    if personal is not None and not await sync_to_async(catalog_readable)(
        tenant_id=upstream.tenant_id, target=f"upstream:{upstream.pk}", auth=personal
    ):
        # Nobody to read it as: not a failure of the upstream's (its page says a member must connect first).
        return None
    target = UpstreamTarget.of(upstream)
    try:
        if pooled:
            connection = await upstream_pool.connection(target)
            try:
                listing = await listing_fetch(connection)
            except Exception as exc:
                await upstream_pool.discard(connection)
                raise connection.failure(exc) from None
        else:
            try:
                async with asyncio.timeout(timeout):
                    listing, _ = await upstream_discover(target)
            except TimeoutError:
                raise UpstreamFailure(
                    f"upstream {upstream.name!r}: its catalog was not read within {timeout:.0f}s"
                ) from None
        report = await sync_to_async(mirror_apply)(upstream=upstream, listing=listing, actor=actor)
    except (UpstreamFailure, ValidationError) as exc:
        message = str(exc) if isinstance(exc, UpstreamFailure) else " ".join(exc.messages)
        # A pooled refresh cut short by the platform itself (the upstream flooded it with list_changed and its
        # connections were closed) keeps the reason the pool recorded, which tells the admin what happened.
        if not (pooled and upstream_pool.muted_for(upstream_id) > 0):
            await Upstream.objects.filter(pk=upstream_id).aupdate(last_error=message, last_error_at=timezone.now())
        raise
    logger.info("refreshed upstream %s of tenant %s: %s", upstream.name, upstream.tenant.slug, report)
    if report.skipped:
        # A refresh nobody asked for (list_changed, the schedule) tells the admin through the upstream's page.
        skipped = f"{len(report.skipped)} item(s) skipped at the last refresh: {' '.join(report.skipped)}"
        await Upstream.objects.filter(pk=upstream_id).aupdate(last_error=skipped, last_error_at=timezone.now())
    return report


@dataclass(frozen=True)
class UpstreamProbe:
    """What connecting to an upstream found: how, which revision, and how long one request took there and back."""

    transport: str
    protocol_version: str
    round_trip_ms: float

    def __str__(self) -> str:
        transport = Upstream.Transport(self.transport).label if self.transport else "an unknown transport"
        return f"connected over {transport}, protocol {self.protocol_version}, round trip {self.round_trip_ms:.0f} ms"


async def upstream_probe(upstream_id: int, *, timeout: float = 2 * CONNECT_TIMEOUT) -> UpstreamProbe:
    """Connect to the upstream over a connection of its own, ping it (2026-07-28: list its tools' first page), close;
    the outcome is its health, as a call's
    would be (a failure counts towards its circuit). Raises ``UpstreamFailure`` (within ``timeout`` seconds)."""
    upstream = await Upstream.objects.select_related("tenant").aget(pk=upstream_id)
    target = UpstreamTarget.of(upstream)
    connection = UpstreamConnection(target)
    try:
        async with asyncio.timeout(timeout):
            await connection.open()
            started = time.perf_counter()
            try:
                client = connection.client
                if connection.protocol_version < "2026":
                    await client.send_ping()
                else:  # 2026-07-28 has no ping: the first page of a list is the lightest request
                    await client.list_tools(cache_mode="bypass")
            except Exception as exc:
                raise connection.failure(exc) from None
            round_trip = (time.perf_counter() - started) * 1000
    except (UpstreamFailure, TimeoutError) as exc:
        message = (
            str(exc) if isinstance(exc, UpstreamFailure) else f"upstream {upstream.name!r}: no answer in {timeout:.0f}s"
        )
        await upstream_pool.failed(target, message)
        raise UpstreamFailure(message) from None
    finally:
        await connection.close()
    probe = UpstreamProbe(connection.transport, connection.protocol_version, round_trip)
    await upstream_pool.succeeded(target, connection=connection)
    return probe


async def _refresh_quietly(upstream_id: int) -> None:
    await upstream_refresh(upstream_id, actor=UPSTREAM_NOTICE)


async def _mark_session_tool(upstream: Upstream, remote: str) -> None:
    await sync_to_async(upstream_tool_needs_session)(upstream=upstream, remote=remote)


upstream_pool.set_refresher(_refresh_quietly)
set_session_marker(_mark_session_tool)
