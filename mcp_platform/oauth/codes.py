"""Authorization codes are used once: each exchanged code is remembered (by checksum) with the tokens it gave,
and a replay revokes them (RFC 6749 §4.1.2, RFC 9700 §4.2.1, OAuth 2.1 §4.1.3).

django-oauth-toolkit deletes a code when it is exchanged, so a replay only finds nothing. The platform's
validator calls ``authorization_code_consumed`` in the exchange's transaction and ``authorization_code_replayed``
when a code is not found; the token endpoint runs in one transaction with the code's row locked, so concurrent
exchanges of one code are one exchange and replays of it.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from mcp_platform.oauth.models import ConsumedAuthorizationCode, TenantApplication

# How long a consumed code is remembered. A code lives for a minute; a replay comes within seconds (the
# attacker and the client race for it), but a late one still revokes what it can.
CONSUMED_CODE_RETENTION = timedelta(days=1)


def checksum(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def authorization_code_consumed(*, code: str, application: TenantApplication, access_token: str | None) -> None:
    """Remember that ``code`` was exchanged by ``application`` for ``access_token`` (raw value, as issued) and
    the refresh token family minted with it."""
    issued = (
        get_access_token_model().objects.filter(token_checksum=checksum(access_token)).first() if access_token else None
    )
    family = None
    if issued is not None:
        family = (
            get_refresh_token_model()
            .objects.filter(access_token_id=issued.pk)
            .values_list("token_family", flat=True)
            .first()
        )
    ConsumedAuthorizationCode.objects.update_or_create(
        code_checksum=checksum(code),
        defaults={
            "application": application,
            "access_token_id": issued.pk if issued is not None else None,
            "token_family": family,
        },
    )


def authorization_code_replayed(*, code: str, application: TenantApplication) -> bool:
    """If ``application`` already exchanged ``code``, revoke every token that came of it (the first access
    token, and the whole refresh rotation family with its access tokens) and return True."""
    consumed = ConsumedAuthorizationCode.objects.filter(code_checksum=checksum(code), application=application).first()
    if consumed is None:
        return False
    if consumed.token_family is not None:
        get_refresh_token_model().revoke_family(consumed.token_family)
    if consumed.access_token_id is not None:
        get_access_token_model().objects.filter(pk=consumed.access_token_id).delete()
    return True


def consumed_codes_purge(*, older_than: timedelta = CONSUMED_CODE_RETENTION) -> int:
    """Forget codes consumed more than ``older_than`` ago; returns how many."""
    deleted, _ = ConsumedAuthorizationCode.objects.filter(consumed__lt=timezone.now() - older_than).delete()
    return deleted
