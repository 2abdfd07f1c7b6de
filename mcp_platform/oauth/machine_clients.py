"""Machine clients: confidential client-credentials clients a tenant admin registers for one tenant.

The secret is generated here, handed back once, and stored hashed (django-oauth-toolkit hashes it on save).
A token such a client obtains is for its tenant's endpoint, its principal is the client, and its scopes are at
most those the admin allowed. The admin may also let it exchange people's tokens for tokens to named upstreams
(``exchange_targets``, RFC 8693: ``token_exchange``).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import transaction
from oauth2_provider.generators import generate_client_secret
from oauth2_provider.models import AbstractApplication, get_access_token_model

from mcp_platform.oauth.models import TenantApplication
from mcp_platform.oauth.scopes import SCOPES, ordered
from tenants.models import Tenant
from tenants.selectors import server_scope_vocabulary, tool_scope_vocabulary


def checked_scopes(tenant: Tenant, scopes: list[str]) -> str:
    """``scopes`` as stored: each a platform scope or one a tool or server of ``tenant`` requires. Raises
    ``ValidationError``."""
    if not scopes:
        raise ValidationError({"allowed_scopes": ["Allow the client at least one scope."]})
    known = {*SCOPES, *tool_scope_vocabulary(tenant=tenant), *server_scope_vocabulary(tenant=tenant)}
    unknown = sorted(set(scopes) - known)
    if unknown:
        raise ValidationError(
            {
                "allowed_scopes": [
                    f"{' '.join(unknown)}: neither a platform scope nor one a tool or server of {tenant} requires."
                ]
            }
        )
    return " ".join(ordered(scopes))


def machine_client_create(
    *, tenant: Tenant, name: str, scopes: list[str], exchange_targets: Sequence[str] = ()
) -> tuple[TenantApplication, str]:
    """Register a machine client for ``tenant``, allowed to exchange tokens for ``exchange_targets`` (upstream
    resource URLs) if any; returns it and its secret, which is not stored in the clear.

    Raises ``ValidationError`` keyed by field.
    """
    secret = generate_client_secret()
    client = TenantApplication(
        tenant=tenant,
        name=name,
        client_type=AbstractApplication.CLIENT_CONFIDENTIAL,
        authorization_grant_type=AbstractApplication.GRANT_CLIENT_CREDENTIALS,
        client_secret=secret,
        hash_client_secret=True,
        allowed_scopes=checked_scopes(tenant, scopes),
        exchange_targets="\n".join(exchange_targets),
        algorithm=AbstractApplication.NO_ALGORITHM,  # no person, no ID token
    )
    client.full_clean()
    client.save()
    return client, secret


def machine_client_update(
    *, client: TenantApplication, name: str, scopes: list[str], exchange_targets: Sequence[str]
) -> TenantApplication:
    """Rename a machine client, change its scopes or the upstreams it may exchange tokens for; tokens it holds
    keep the scopes and audience they were issued with until they expire (an hour at most). Raises
    ``ValidationError``."""
    if client.tenant is None:
        raise ValidationError("A machine client belongs to a tenant.")
    client.name = name
    client.allowed_scopes = checked_scopes(client.tenant, scopes)
    client.exchange_targets = "\n".join(exchange_targets)
    client.full_clean(exclude=["client_secret"])
    client.save(update_fields=["name", "allowed_scopes", "exchange_targets", "updated"])
    return client


def machine_client_rotate_secret(*, client: TenantApplication) -> str:
    """Give the client a new secret and revoke every token it holds; returns the new secret."""
    secret = generate_client_secret()
    with transaction.atomic():
        client.client_secret = secret
        client.save(update_fields=["client_secret", "updated"])
        get_access_token_model().objects.filter(application=client).delete()
    return secret
