"""Every write to upstream MCP servers: add (connect, discover and mirror before returning), change, remove, and
refresh their mirrored catalogs (on their list_changed, on a schedule, on demand).
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
from tenants.events import CATALOG_KINDS, catalog_changed, tenant_changed
from tenants.federation.backend import set_session_marker
from tenants.federation.connection import CONNECT_TIMEOUT, UpstreamConnection, UpstreamFailure, UpstreamTarget
from tenants.federation.mirror import Listing, MirrorReport, listing_fetch, listing_stored, mirror_apply
from tenants.federation.overrides import overrides_errors
from tenants.federation.pool import upstream_pool
from tenants.history.revisions import catalog_revision, note_added, note_change, note_deleted
from tenants.models import Tenant, Upstream
from tenants.outbound_auth import auth_errors

logger = logging.getLogger(__name__)

JSONObject = dict[str, Any]
UPSTREAM_FIELDS = frozenset({"name", "url", "prefix", "auth", "enabled", "excluded", "session_mode", "session_tools"})
# Changing one of these changes what a connection is (or which one a tool takes): pooled sessions of the old
# revision are dropped.
CONNECTION_FIELDS = frozenset({"url", "auth", "enabled", "session_mode"})
# Read with the cached tool definitions (which carry their upstream row): a change makes every process read again.
CACHED_FIELDS = CONNECTION_FIELDS | {"session_tools"}
# The HTTP tools' auth shapes, less the API key in the query (an MCP endpoint's URL carries no credentials).
UPSTREAM_AUTH_TYPES = ("bearer", "header", "basic", "client_credentials")


def _upstream_auth_errors(auth: Any) -> list[str]:
    if isinstance(auth, dict) and auth.get("type") == "query":
        return ['An upstream authenticates with "bearer", "header", "basic" or "client_credentials".']
    return auth_errors(auth)


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
) -> tuple[Upstream, MirrorReport]:
    """Add an upstream and mirror its catalog before returning (prefix: ``<name>_`` when None); ``actor`` added it.

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
    )
    upstream_validate(upstream)
    listing, connection = async_to_sync(upstream_discover)(UpstreamTarget.of(upstream))
    try:
        with catalog_revision(user=actor.user_id):
            upstream.transport, upstream.protocol_version = connection.transport, connection.protocol_version
            upstream.last_ok_at = timezone.now()
            upstream.save()
            note_added(upstream)
            report = mirror_apply(upstream=upstream, listing=listing, actor=actor, operation="upstream added")
    except IntegrityError as exc:
        raise ValidationError(f"Another upstream called {name!r} was added meanwhile.") from exc
    upstream.refresh_from_db()
    return upstream, report


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
