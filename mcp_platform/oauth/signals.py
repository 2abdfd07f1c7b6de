"""Signals of the oauth room, for the rooms that watch the authorization server without it knowing them."""

from __future__ import annotations

from dataclasses import dataclass

from django.dispatch import Signal


@dataclass(frozen=True)
class TokenExchangeEvent:
    """One token exchange (RFC 8693) by an authenticated client bound to a tenant: issued (``error`` None) or
    refused with ``error`` (the OAuth error code). ``user_id`` is the subject token's person, None when the
    request was refused before that token was found; ``target`` the upstream(s) named, ``scope`` the scopes issued
    (or asked for, when refused). Never a token."""

    tenant_id: int
    user_id: int | None
    client_id: str
    client_name: str
    target: str
    scope: str
    error: str | None


# Sent with ``event`` (a ``TokenExchangeEvent``) inside the token endpoint's transaction, once the exchange's answer
# is decided. Receivers must not raise: they run on the token endpoint's request.
token_exchanged = Signal()
