"""People's credentials as rows: store one sealed, read one at the moment of use (an OAuth connection refreshed
before it expires, once across processes), remove one; and the single-use links that bring a person to the
connect page. Values are unsealed only here and never logged; errors name the target, never a token or key.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import secrets
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from tenants.connections import events
from tenants.connections.events import ConnectionEvent, announce
from tenants.connections.oauth_client import RefreshRefused, TokenSet
from tenants.models import ConnectLink, OAuthClientRegistration, OpenApiSource, PersonalCredential, Tool, Upstream
from tenants.secrets import SecretUnreadable, current_key_id, personal_seal, personal_unseal

LINK_LIFETIME = timedelta(minutes=10)
# A token is refreshed this long before the expiry its server announced (clock skew, time in flight).
REFRESH_MARGIN = timedelta(seconds=60)
# How long one process may hold the refresh of a credential before another may take it over (it died).
REFRESH_CLAIM = timedelta(seconds=30)
# How long a process waits for another's refresh, and how often it looks.
REFRESH_WAIT = 20.0
REFRESH_POLL = 0.1
KEY_LIMIT = 8 * 1024


class CredentialUnusable(Exception):
    """The person's credential cannot be used now (the upstream's token endpoint failed for a moment, or another
    process's refresh did not finish in time): the call fails, the person need not connect again."""


# Refreshes a credential's tokens at its authorization server: (credential, refresh token) -> new tokens (a refresh
# token None: keep the one it had). Raises ``RefreshRefused`` (the person must connect again) or
# ``CredentialUnusable``. Supplied by ``tenants.connections.flow``.
Refresher = Callable[[PersonalCredential, str], Awaitable[TokenSet]]


def target_of(item: Tool | Upstream | OpenApiSource) -> str:
    """The target a person's credential for ``item`` is stored under: an OpenAPI source's tools share one."""
    if isinstance(item, Upstream):
        return f"upstream:{item.pk}"
    if isinstance(item, OpenApiSource):
        return f"openapi:{item.pk}"
    if item.openapi_source_id is not None:
        return f"openapi:{item.openapi_source_id}"
    return f"tool:{item.pk}"


def target_item(*, tenant_id: int, target: str) -> Tool | Upstream | OpenApiSource | None:
    """The tenant's item ``target`` names, or None (unknown, removed, or another tenant's)."""
    kind, _, pk = target.partition(":")
    model = {"upstream": Upstream, "openapi": OpenApiSource, "tool": Tool}.get(kind)
    if model is None or not pk.isdigit():
        return None
    return model.objects.filter(tenant_id=tenant_id, pk=int(pk)).first()  # type: ignore[attr-defined, no-any-return]


def target_title(item: Tool | Upstream | OpenApiSource | None) -> str:
    """How pages name a target: "upstream github", "OpenAPI source Petstore", "tool weather"."""
    if item is None:
        return "a removed item"
    if isinstance(item, Upstream):
        return f"upstream {item.name}"
    if isinstance(item, OpenApiSource):
        return f"OpenAPI source {item.name}"
    return f"tool {item.name}"


def _binding(tenant_id: int, user_id: int, target: str) -> tuple[object, ...]:
    return (tenant_id, user_id, target)


def credential_values(credential: PersonalCredential) -> dict[str, Any]:
    """The unsealed values of ``credential``. Raises ``SecretUnreadable`` (a key no longer configured)."""
    binding = _binding(credential.tenant_id, credential.user_id, credential.target)
    plain = personal_unseal(credential.sealed, credential.key_id, binding=binding, what=f"the {credential}")
    values = json.loads(plain)
    if not isinstance(values, dict):
        raise SecretUnreadable(f"the {credential} holds no values")
    return values


def _seal(credential: PersonalCredential, values: dict[str, Any]) -> None:
    binding = _binding(credential.tenant_id, credential.user_id, credential.target)
    credential.sealed, credential.key_id = personal_seal(json.dumps(values), binding=binding)


def _expires_at(expires_in: float | None) -> datetime | None:
    return None if expires_in is None else timezone.now() + timedelta(seconds=max(0.0, float(expires_in)))


def _credential_put(
    *, tenant_id: int, user_id: int, target: str, kind: str, values: dict[str, Any], action: str, **fields: Any
) -> PersonalCredential:
    """Keep ``values`` as the person's ``kind`` of credential for ``target`` (replacing the one they had, whatever
    its state), with ``fields``, and announce ``action``."""
    with transaction.atomic():
        credential = (
            PersonalCredential.objects.select_for_update().filter(tenant_id=tenant_id, user_id=user_id, target=target)
        ).first() or PersonalCredential(tenant_id=tenant_id, user_id=user_id, target=target)
        credential.kind = kind
        credential.status = PersonalCredential.Status.ACTIVE
        _seal(credential, values)
        credential.last_error = ""
        credential.refresh_claimed_until = None
        for name, value in fields.items():
            setattr(credential, name, value)
        credential.full_clean(exclude=["sealed", "key_id"])
        credential.save()
    announce(ConnectionEvent(tenant_id, user_id, target, action))
    return credential


def credential_store_oauth(
    *,
    tenant_id: int,
    user_id: int,
    target: str,
    access_token: str,
    refresh_token: str | None,
    expires_in: float | None,
    scope: str,
    issuer: str,
) -> PersonalCredential:
    """Keep a person's new OAuth connection to ``target`` (replacing the one they had), and announce it."""
    return _credential_put(
        tenant_id=tenant_id,
        user_id=user_id,
        target=target,
        kind=PersonalCredential.Kind.OAUTH,
        values={"access_token": access_token, "refresh_token": refresh_token},
        action=events.CONNECTED,
        scope=scope,
        expires_at=_expires_at(expires_in),
        issuer=issuer,
    )


def personal_key_problem(value: object) -> str | None:
    """Why ``value`` cannot be kept as a personal key, or None (the message never repeats the value)."""
    if not isinstance(value, str) or not value.strip():
        return "Enter the key."
    if len(value) > KEY_LIMIT:
        return f"A key is at most {KEY_LIMIT} characters."
    if not value.isascii() or any(ord(c) < 32 or c == "\x7f" for c in value):
        return "A key is printable ASCII on one line (it is sent in a header or the query)."
    return None


def credential_store_key(*, tenant_id: int, user_id: int, target: str, key: str) -> PersonalCredential:
    """Keep (or replace) a person's own API key for ``target``. Raises ``ValueError`` (``personal_key_problem``)."""
    problem = personal_key_problem(key)
    if problem is not None:
        raise ValueError(problem)
    return _credential_put(
        tenant_id=tenant_id,
        user_id=user_id,
        target=target,
        kind=PersonalCredential.Kind.KEY,
        values={"key": key.strip()},
        action=events.KEY_STORED,
        scope="",
        expires_at=None,
        issuer="",
    )


def credential_remove(*, credential: PersonalCredential, by_user_id: int | None = None) -> dict[str, Any] | None:
    """Delete ``credential`` and announce it; its values (for revocation at the upstream), or None where they no
    longer decrypt. ``by_user_id``: the admin who disconnected a member (None: the person themselves)."""
    try:
        values = credential_values(credential)
    except SecretUnreadable:
        values = None
    credential.delete()
    action = events.REVOKED if credential.kind == PersonalCredential.Kind.OAUTH else events.KEY_REMOVED
    by = None if by_user_id == credential.user_id else by_user_id
    announce(ConnectionEvent(credential.tenant_id, credential.user_id, credential.target, action, by_user_id=by))
    return values


def credentials_of(*, user_id: int) -> list[PersonalCredential]:
    """A person's credentials in every tenant, newest first."""
    return list(PersonalCredential.objects.filter(user_id=user_id).select_related("tenant").order_by("-updated_at"))


# ---- use -------------------------------------------------------------------------------------------------------


def _usable(credential: PersonalCredential, now: datetime) -> bool:
    return credential.expires_at is None or credential.expires_at - REFRESH_MARGIN > now


def _note_use(credential: PersonalCredential, now: datetime) -> None:
    if credential.last_used_at is not None and now - credential.last_used_at < events.USE_RESOLUTION:
        return
    PersonalCredential.objects.filter(pk=credential.pk).update(last_used_at=now)
    announce(ConnectionEvent(credential.tenant_id, credential.user_id, credential.target, events.USED))


def _read(tenant_id: int, user_id: int, target: str) -> PersonalCredential | None:
    return PersonalCredential.objects.filter(tenant_id=tenant_id, user_id=user_id, target=target).first()


def _claim(pk: int, now: datetime) -> bool:
    """Take the refresh of credential ``pk`` for this process: one compare-and-set, so across processes (and on
    SQLite as on PostgreSQL) exactly one wins until its claim lapses."""
    free = Q(refresh_claimed_until__isnull=True) | Q(refresh_claimed_until__lt=now)
    return bool(
        PersonalCredential.objects.filter(free, pk=pk, status=PersonalCredential.Status.ACTIVE).update(
            refresh_claimed_until=now + REFRESH_CLAIM
        )
    )


def _refreshed(pk: int, fresh: TokenSet, old_refresh: str) -> None:
    credential = PersonalCredential.objects.get(pk=pk)
    _seal(credential, {"access_token": fresh.access_token, "refresh_token": fresh.refresh_token or old_refresh})
    credential.expires_at = _expires_at(fresh.expires_in)
    if fresh.scope is not None:
        credential.scope = fresh.scope
    credential.refreshed_at = timezone.now()
    credential.refresh_claimed_until = None
    credential.last_error = ""
    credential.save()


def _refused(pk: int, reason: str) -> None:
    PersonalCredential.objects.filter(pk=pk).update(
        status=PersonalCredential.Status.NEEDS_PERSON, last_error=reason[:300], refresh_claimed_until=None
    )


def _unclaim(pk: int) -> None:
    PersonalCredential.objects.filter(pk=pk).update(refresh_claimed_until=None)


async def aaccess(*, tenant_id: int, user_id: int, target: str, refresher: Refresher) -> str | None:
    """The person's usable access token or key for ``target``, or None where they must connect (none stored, or a
    refresh was refused). An OAuth token about to expire is refreshed first: by one process, the others waiting
    for it. Raises ``CredentialUnusable`` (a failure that connecting again would not mend)."""
    deadline = asyncio.get_running_loop().time() + REFRESH_WAIT
    while True:
        credential = await sync_to_async(_read)(tenant_id, user_id, target)
        if credential is None or credential.status != PersonalCredential.Status.ACTIVE:
            return None
        now = timezone.now()
        try:
            values = credential_values(credential)
        except SecretUnreadable as exc:
            raise CredentialUnusable(str(exc)) from None
        if credential.kind == PersonalCredential.Kind.KEY:
            await sync_to_async(_note_use)(credential, now)
            return str(values["key"])
        if _usable(credential, now):
            await sync_to_async(_note_use)(credential, now)
            return str(values["access_token"])
        refresh_token = values.get("refresh_token")
        if not refresh_token:
            # Expired with nothing to refresh it: the person connects again.
            await sync_to_async(_refused)(credential.pk, "the access token expired and there is no refresh token")
            return None
        if await sync_to_async(_claim)(credential.pk, now):
            return await _refresh(credential, str(refresh_token), refresher)
        if asyncio.get_running_loop().time() > deadline:
            raise CredentialUnusable(f"the {credential} is being refreshed by another process; try again")
        await asyncio.sleep(REFRESH_POLL)


async def _refresh(credential: PersonalCredential, refresh_token: str, refresher: Refresher) -> str | None:
    event = ConnectionEvent(credential.tenant_id, credential.user_id, credential.target, events.REFRESHED)
    try:
        fresh = await refresher(credential, refresh_token)
    except RefreshRefused as exc:
        await sync_to_async(_refused)(credential.pk, str(exc))
        await sync_to_async(announce)(dataclasses.replace(event, action=events.REFRESH_FAILED, error=str(exc)[:300]))
        return None
    except BaseException:
        await sync_to_async(_unclaim)(credential.pk)
        raise
    await sync_to_async(_refreshed)(credential.pk, fresh, refresh_token)
    await sync_to_async(announce)(event)
    return fresh.access_token


def personal_reencrypt() -> int:
    """Re-seal every person's credential, connect link and registered client secret not under the current key (after
    a key rotation, beside ``secrets_reencrypt``); how many. Each row in its own transaction: an interrupted run can
    simply be run again. Raises ``SecretUnreadable`` for a row no configured key decrypts."""
    current = current_key_id()
    moved = 0
    stale: list[tuple[type[Any], str, Callable[[Any], tuple[object, ...]]]] = [
        (PersonalCredential, "sealed", lambda row: _binding(row.tenant_id, row.user_id, row.target)),
        (ConnectLink, "sealed", lambda row: ("connect-link", row.pk, row.user_id)),
        (OAuthClientRegistration, "sealed_secret", lambda row: ("oauth-client", row.tenant_id, row.target)),
    ]
    for model, field, binding in stale:
        for pk in list(model.objects.exclude(**{field: ""}).exclude(key_id=current).values_list("pk", flat=True)):
            with transaction.atomic():
                row = model.objects.select_for_update().filter(pk=pk).first()
                if row is None or row.key_id == current:
                    continue
                plain = personal_unseal(getattr(row, field), row.key_id, binding=binding(row), what=f"the {row}")
                sealed, row.key_id = personal_seal(plain, binding=binding(row))
                setattr(row, field, sealed)
                row.save(update_fields=[field, "key_id"])
                moved += 1
    return moved


# ---- links -----------------------------------------------------------------------------------------------------


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def connect_link_create(*, tenant_id: int, user_id: int, target: str, elicitation_id: str) -> str:
    """A new single-use link's token (the link is ``/connect/<token>/``), valid for ``LINK_LIFETIME``; expired
    links of the person go with it."""
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    ConnectLink.objects.filter(user_id=user_id, expires_at__lt=now).delete()
    ConnectLink.objects.create(
        token_digest=_digest(token),
        tenant_id=tenant_id,
        user_id=user_id,
        target=target,
        elicitation_id=elicitation_id,
        expires_at=now + LINK_LIFETIME,
    )
    return token


def connect_link_get(*, token: str) -> ConnectLink | None:
    """The unused, unexpired link ``token`` names, or None."""
    return (
        ConnectLink.objects.filter(token_digest=_digest(token), used_at__isnull=True, expires_at__gt=timezone.now())
        .select_related("tenant")
        .first()
    )


def connect_link_begin(*, link: ConnectLink, verifier: str) -> str:
    """Start the OAuth leg of ``link``: a new ``state`` for the authorization request, with the PKCE ``verifier``
    sealed on the link (starting again replaces both)."""
    state = secrets.token_urlsafe(32)
    link.state_digest = _digest(state)
    link.sealed, link.key_id = personal_seal(verifier, binding=("connect-link", link.pk, link.user_id))
    link.save(update_fields=["state_digest", "sealed", "key_id"])
    return state


def connect_link_finish(*, state: str, user_id: int) -> tuple[ConnectLink, str] | None:
    """The link whose OAuth leg ``state`` belongs to, used up now, and its PKCE verifier; None where the state is
    unknown, used, expired, or another person's."""
    with transaction.atomic():
        link = (
            ConnectLink.objects.select_for_update()
            .filter(state_digest=_digest(state), used_at__isnull=True, expires_at__gt=timezone.now(), user_id=user_id)
            .first()
        )
        if link is None:
            return None
        link.used_at = timezone.now()
        link.save(update_fields=["used_at"])
    verifier = personal_unseal(link.sealed, link.key_id, binding=("connect-link", link.pk, link.user_id), what="link")
    return link, verifier


def connect_link_use(*, link: ConnectLink) -> bool:
    """Use up ``link`` (a personal key was stored through it); False where it was used meanwhile."""
    return bool(ConnectLink.objects.filter(pk=link.pk, used_at__isnull=True).update(used_at=timezone.now()))


def connect_links_purge() -> int:
    """Delete links that expired (the beat schedule runs this); how many."""
    deleted, _ = ConnectLink.objects.filter(expires_at__lt=timezone.now()).delete()
    return deleted
