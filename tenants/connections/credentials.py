"""What a call sends upstream when its target acts as the person: the caller's own OAuth token or key, a token
exchanged for the upstream's audience, or, for a machine client, the tenant's shared credentials (or a refusal).

A person without a usable credential is asked to connect through the question their client's era allows
(``ToolContext.require_url_visit``); the link is single use and bound to them, the tenant and the target.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from asgiref.sync import sync_to_async
from django.db.models import F

from mcp_core.context import ToolContext
from mcp_core.errors import ToolError
from tenants.connections import services
from tenants.connections.acting import Caller, caller_of
from tenants.connections.flow import refresh_credential
from tenants.models import PersonalCredential, Tool, Upstream
from tenants.outbound_auth import PERSONAL_AUTH_TYPES, Credentials, credentials_for, header_value_problem

# (tenant id, caller, auth config) -> (access token for the config's audience, its lifetime in seconds). Raises
# ``ToolError``. Registered by the platform's authorization server (``mcp_platform.oauth``) at start-up.
Exchanger = Callable[[int, Caller, dict[str, Any]], Awaitable[tuple[str, float | None]]]
_exchanger: list[Exchanger] = []


def register_token_exchanger(exchanger: Exchanger) -> None:
    _exchanger[:] = [exchanger]


def acts_as_person(auth: Any) -> bool:
    """Whether ``auth`` uses each caller's own credential rather than the tenant's."""
    return isinstance(auth, dict) and auth.get("type") in PERSONAL_AUTH_TYPES


def _placed(auth: dict[str, Any], value: str, what: str) -> Credentials:
    problem = header_value_problem(value)
    found = Credentials(sensitive=[value])
    placement = auth.get("placement", "bearer") if auth["type"] == "user_key" else "bearer"
    if placement == "query":
        found.params.append((auth["name"], value))
        return found
    if problem is not None:
        raise ToolError(f"{what} cannot be sent in a header: {problem}")
    name = "Authorization" if placement == "bearer" else auth["name"]
    found.headers[name] = f"Bearer {value}" if placement == "bearer" else value
    found.secret_headers.add(name)
    return found


def connect_message(auth: dict[str, Any], title: str) -> str:
    if auth["type"] == "user_key":
        label = auth.get("label") or "API key"
        return f"{title} needs your own {label}. Open the link to add it, then try again."
    return f"{title} acts as you: connect your account to it, then try again."


async def person_credentials(
    *, tenant_id: int, target: str, title: str, auth: dict[str, Any], ctx: ToolContext, timeout: httpx.Timeout
) -> Credentials:
    """What a call of ``target`` (named ``title`` in messages) sends for ``ctx``'s caller under a personal ``auth``.

    Raises ``ToolError`` (a machine client refused, the person declined or has not finished connecting, the
    upstream's token endpoint failed) and whatever ``ctx.require_url_visit`` raises to ask the person.
    """
    caller = caller_of(ctx)
    if caller.user_id is None:
        machine = auth.get("machine")
        if isinstance(machine, dict):
            return await credentials_for(tenant_id=tenant_id, tool_name=title, auth=machine, timeout=timeout)
        who = "a machine client" if caller.is_machine else "an anonymous caller"
        raise ToolError(f"{title} acts as the person calling it, and {who} is not one; its admin allows no others.")
    if auth["type"] == "token_exchange":
        if not _exchanger:
            raise ToolError(f"{title}: this platform does not exchange tokens")
        token, _lifetime = await _exchanger[0](tenant_id, caller, auth)
        return _placed(auth, token, "the exchanged token")
    value = await _access(tenant_id, caller.user_id, target)
    if value is None:
        await _ask_to_connect(tenant_id=tenant_id, caller=caller, target=target, auth=auth, title=title, ctx=ctx)
        value = await _access(tenant_id, caller.user_id, target)
        if value is None:
            raise ToolError(f"{title}: you have not finished connecting. Open the link again, then try again.")
    what = "your key" if auth["type"] == "user_key" else "your access token"
    return _placed(auth, value, what)


async def call_credentials(
    *,
    tenant_id: int,
    item: Tool | Upstream,
    name: str,
    title: str,
    auth: dict[str, Any] | None,
    ctx: ToolContext,
    timeout: httpx.Timeout,
) -> Credentials:
    """What a call of ``item`` sends under ``auth``: the tenant's shared credentials (messages name the tool or
    upstream ``name``), or, where ``auth`` acts as the person, theirs (``person_credentials``; messages start with
    ``title``). Raises ``ToolError``."""
    if auth is not None and acts_as_person(auth):
        return await person_credentials(
            tenant_id=tenant_id, target=services.target_of(item), title=title, auth=auth, ctx=ctx, timeout=timeout
        )
    return await credentials_for(tenant_id=tenant_id, tool_name=name, auth=auth, timeout=timeout)


async def _access(tenant_id: int, user_id: int, target: str) -> str | None:
    try:
        return await services.aaccess(tenant_id=tenant_id, user_id=user_id, target=target, refresher=refresh_credential)
    except services.CredentialUnusable as exc:
        raise ToolError(str(exc)) from None


async def _ask_to_connect(
    *, tenant_id: int, caller: Caller, target: str, auth: dict[str, Any], title: str, ctx: ToolContext
) -> None:
    assert caller.user_id is not None
    elicitation_id = secrets.token_urlsafe(16)
    token = await sync_to_async(services.connect_link_create)(
        tenant_id=tenant_id, user_id=caller.user_id, target=target, elicitation_id=elicitation_id
    )
    url = f"{caller.base_url.rstrip('/')}/connect/{token}/"
    await ctx.require_url_visit(connect_message(auth, title), url, elicitation_id, key=f"connect {target}")


def _readers(tenant_id: int, target: str) -> list[int]:
    active = PersonalCredential.Status.ACTIVE
    rows = PersonalCredential.objects.filter(tenant_id=tenant_id, target=target, status=active)
    return list(rows.order_by(F("last_used_at").desc(nulls_last=True)).values_list("user_id", flat=True)[:5])


async def catalog_reader_credentials(
    *, tenant_id: int, target: str, auth: dict[str, Any], timeout: httpx.Timeout
) -> Credentials | None:
    """What the platform reads a personal target's catalog with (an upstream's tools/list, outside any call): the
    machine clients' shared config where the admin set one, else the credential of a member who connected (the
    most recently active first); None where there is neither. Raises ``ToolError``."""
    machine = auth.get("machine")
    if isinstance(machine, dict):
        return await credentials_for(tenant_id=tenant_id, tool_name=target, auth=machine, timeout=timeout)
    if auth["type"] == "token_exchange":
        return None
    for user_id in await sync_to_async(_readers)(tenant_id, target):
        value = await _access(tenant_id, user_id, target)
        if value is not None:
            return _placed(auth, value, "a member's credential")
    return None


def catalog_readable(*, tenant_id: int, target: str, auth: dict[str, Any]) -> bool:
    """Whether the platform can read a personal target's catalog now: with machine clients' shared credentials, or
    with a member's connection (a token exchange needs a person's request, so never outside one)."""
    if isinstance(auth.get("machine"), dict):
        return True
    if auth["type"] == "token_exchange":
        return False
    active = PersonalCredential.Status.ACTIVE
    return PersonalCredential.objects.filter(tenant_id=tenant_id, target=target, status=active).exists()
