"""Tenant secrets, and people's own tokens and keys: the one module that encrypts, decrypts and re-encrypts them
(AES-256-GCM under MCP_SECRET_KEYS).

Everything else holds a reference (tenant + name) and asks for the value at the moment of use. A value never lands
in a model field in the clear, a log line or an exception message: errors name the secret, never its value.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass

from asgiref.sync import sync_to_async
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.core.exceptions import ValidationError
from django.db import transaction

from mcp_infra.conf import decode_secret_key, platform_settings
from tenants.models import Secret, Tenant

NONCE_BYTES = 12
# Versioned so a later format (another cipher, another binding) can be told apart from this one.
_AAD_PREFIX = b"mcp-platform/secret/v1"
_PERSONAL_AAD_PREFIX = b"mcp-platform/personal/v1"


class SecretNotFound(LookupError):
    """The tenant has no secret of that name (the message names the secret, never a value)."""


class SecretUnreadable(Exception):
    """A stored secret cannot be decrypted: its key is no longer configured, or the row was tampered with or
    copied from another tenant or name."""


@dataclass(frozen=True, slots=True)
class _Key:
    key_id: str
    cipher: AESGCM


def _key_id(key: bytes) -> str:
    # A fingerprint, not the key: safe to store and show, and stable across processes.
    return hashlib.sha256(b"mcp-platform/secret-key-id/" + key).hexdigest()[:16]


def _keys() -> list[_Key]:
    """The configured keys, the encrypting one first. Raises ``ValueError`` for a malformed key (the system check
    reports that at start-up, so it is not met at run time)."""
    return [_Key(_key_id(key), AESGCM(key)) for key in (decode_secret_key(v) for v in platform_settings.SECRET_KEYS)]


def _aad(tenant_id: int, name: str) -> bytes:
    # Binds the ciphertext to its row: copied to another tenant or name, it no longer authenticates.
    return b"\x00".join((_AAD_PREFIX, str(tenant_id).encode(), name.encode()))


def _seal(aad: bytes, value: str) -> tuple[str, str]:
    key = _keys()[0]
    nonce = os.urandom(NONCE_BYTES)
    sealed = key.cipher.encrypt(nonce, value.encode(), aad)
    return base64.b64encode(nonce + sealed).decode("ascii"), key.key_id


def _unseal(aad: bytes, ciphertext: str, key_id: str, what: str) -> str:
    """Raises ``SecretUnreadable`` naming ``what``, never a value."""
    key = next((k for k in _keys() if k.key_id == key_id), None)
    if key is None:
        raise SecretUnreadable(f"{what} was encrypted with a key that is no longer configured")
    try:
        raw = base64.b64decode(ciphertext, validate=True)
        plain = key.cipher.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], aad)
    except (InvalidTag, binascii.Error, ValueError):
        raise SecretUnreadable(f"{what} does not decrypt where it is stored") from None
    return plain.decode()


def _encrypt(tenant_id: int, name: str, value: str) -> tuple[str, str]:
    return _seal(_aad(tenant_id, name), value)


def _decrypt(secret: Secret) -> str:
    """The value of ``secret``. Raises ``SecretUnreadable``."""
    return _unseal(_aad(secret.tenant_id, secret.name), secret.ciphertext, secret.key_id, f"secret {secret.name!r}")


def _personal_aad(binding: tuple[object, ...]) -> bytes:
    return b"\x00".join((_PERSONAL_AAD_PREFIX, *(str(part).encode() for part in binding)))


def personal_seal(value: str, *, binding: tuple[object, ...]) -> tuple[str, str]:
    """``value`` (a person's token or key) encrypted under the current key and bound to ``binding`` (tenant, person,
    target: copied to another row it no longer decrypts); (ciphertext, key id)."""
    return _seal(_personal_aad(binding), value)


def current_key_id() -> str:
    """The id of the key that encrypts now (the first of MCP_SECRET_KEYS)."""
    return _keys()[0].key_id


def personal_unseal(ciphertext: str, key_id: str, *, binding: tuple[object, ...], what: str) -> str:
    """What ``personal_seal`` sealed with the same ``binding``. Raises ``SecretUnreadable`` naming ``what``."""
    return _unseal(_personal_aad(binding), ciphertext, key_id, what)


def secret_value_problem(value: object) -> str | None:
    """Why ``value`` cannot be stored as a secret, or None (the message never repeats the value)."""
    if not isinstance(value, str) or value == "":
        return "A secret needs a value."
    if "\x00" in value:
        return "A secret value cannot contain NUL characters."
    return None


def secret_set(*, tenant: Tenant, name: str, value: str) -> Secret:
    """Store ``value`` as ``tenant``'s secret ``name`` (creating or replacing it). Raises ``ValidationError``."""
    problem = secret_value_problem(value)
    if problem is not None:
        raise ValidationError({"value": [problem]})
    with transaction.atomic():
        secret = Secret.objects.select_for_update().filter(tenant=tenant, name=name).first()
        if secret is None:
            secret = Secret(tenant=tenant, name=name)
        # The name (and its uniqueness) is checked before anything is encrypted under it.
        secret.full_clean(exclude=["ciphertext", "key_id"])
        secret.ciphertext, secret.key_id = _encrypt(tenant.pk, name, value)
        secret.save()
    return secret


def secret_delete(*, tenant: Tenant, name: str) -> None:
    """Delete ``tenant``'s secret ``name``. Raises ``SecretNotFound``."""
    deleted, _ = Secret.objects.filter(tenant=tenant, name=name).delete()
    if not deleted:
        raise SecretNotFound(f"tenant {tenant.slug!r} has no secret {name!r}")


def secret_value(*, tenant_id: int, name: str) -> str:
    """The value of the tenant's secret ``name``, at the moment of use. Raises ``SecretNotFound`` and
    ``SecretUnreadable``."""
    secret = Secret.objects.filter(tenant_id=tenant_id, name=name).first()
    if secret is None:
        raise SecretNotFound(f"no secret named {name!r}")
    return _decrypt(secret)


async def asecret_value(*, tenant_id: int, name: str) -> str:
    """``secret_value`` from async code."""
    return await sync_to_async(secret_value)(tenant_id=tenant_id, name=name)


def secrets_reencrypt() -> tuple[int, int]:
    """Re-encrypt every secret not under the first key with it (after a key rotation); (re-encrypted, already
    current). Each row is rewritten in its own transaction, so an interrupted run can simply be run again.
    Raises ``SecretUnreadable`` for a row no configured key decrypts (nothing after it is lost: rerun once fixed).
    """
    current = _keys()[0].key_id
    moved = 0
    for pk in list(Secret.objects.exclude(key_id=current).values_list("pk", flat=True)):
        with transaction.atomic():
            secret = Secret.objects.select_for_update().filter(pk=pk).first()
            if secret is None or secret.key_id == current:
                continue
            secret.ciphertext, secret.key_id = _encrypt(secret.tenant_id, secret.name, _decrypt(secret))
            secret.save(update_fields=["ciphertext", "key_id", "updated_at"])
            moved += 1
    return moved, Secret.objects.filter(key_id=current).count()
