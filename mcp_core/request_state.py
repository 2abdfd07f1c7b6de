"""Integrity-protected ``requestState`` of 2026-07-28 ``input_required`` results (MRTR).

The state travels through the client, so it is attacker-controlled input: it is sealed with HMAC-SHA256 under a
server key and bound to the tenant, the principal, a short expiry and a digest of the original request. The key,
the clock and the binding are passed in; nothing here reads settings or time.

Token: ``v1.<base64url(JSON payload)>.<base64url(HMAC-SHA256(key, "v1." + payload part))>``, unpadded.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from mcp_core.errors import InvalidParams

JSONObject = dict[str, Any]

TOKEN_VERSION: Final = "v1"
# Requests bigger than this are not ours: refuse before decoding (a sealed state is a few kilobytes at most).
MAX_TOKEN_LENGTH: Final = 256 * 1024


class InvalidRequestState(InvalidParams):
    """A ``requestState`` that fails verification: tampered, expired, or issued for another binding (-32602)."""


@dataclass(frozen=True)
class StateBinding:
    """What a sealed state is bound to. ``principal`` is whoever the request acts for (the bearer token's subject
    where the server requires authorization); ``request`` is ``request_digest`` of the original request."""

    tenant: str
    principal: str
    request: str


def derive_key(secret: str | bytes, purpose: str) -> bytes:
    """A key for one purpose only, derived from a master secret (HMAC-SHA256 of the purpose label)."""
    master = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(master, purpose.encode(), hashlib.sha256).digest()


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def request_digest(method: str, params: JSONObject) -> str:
    """SHA-256 of what identifies a request across its retries: method, name or uri, and arguments."""
    subject = {
        "method": method,
        "name": params.get("name"),
        "uri": params.get("uri"),
        "arguments": params.get("arguments") or {},
    }
    return hashlib.sha256(_canonical(subject)).hexdigest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, signed: str) -> str:
    return _b64(hmac.new(key, signed.encode("ascii"), hashlib.sha256).digest())


def seal(data: JSONObject, *, binding: StateBinding, key: bytes, now: float, ttl: float) -> str:
    """A token carrying ``data`` (JSON-serializable) that ``unseal`` accepts until ``now + ttl`` (seconds)."""
    payload = {
        "tid": binding.tenant,
        "sub": binding.principal,
        "req": binding.request,
        "exp": int(now + ttl),
        "data": data,
    }
    signed = f"{TOKEN_VERSION}.{_b64(_canonical(payload))}"
    return f"{signed}.{_mac(key, signed)}"


def unseal(token: str, *, binding: StateBinding, keys: Sequence[bytes], now: float) -> JSONObject:
    """The ``data`` sealed in ``token``, after checking its MAC (under any of ``keys``: the current key first, then
    retired ones), its expiry and its binding.

    Raises InvalidRequestState for anything else: a malformed or altered token, one signed with an unknown key,
    an expired one, or one issued for another tenant, principal or request.
    """
    if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH or not token.isascii():
        raise InvalidRequestState("requestState is malformed")
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != TOKEN_VERSION:
        raise InvalidRequestState("requestState is malformed")
    signed = f"{parts[0]}.{parts[1]}"
    # Compare the encoded MAC, not decoded bytes: every other spelling of the same bytes is rejected too.
    if not any(hmac.compare_digest(_mac(key, signed), parts[2]) for key in keys):
        raise InvalidRequestState("requestState failed its integrity check")
    try:
        payload = json.loads(_unb64(parts[1]))
    except ValueError:
        raise InvalidRequestState("requestState is malformed") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("exp"), int):
        raise InvalidRequestState("requestState is malformed")
    if now >= payload["exp"]:
        raise InvalidRequestState("requestState has expired; start the request again")
    if payload.get("tid") != binding.tenant:
        raise InvalidRequestState("requestState was issued for another server")
    if payload.get("sub") != binding.principal:
        raise InvalidRequestState(
            "requestState was issued to another principal (user or client); start the request again"
        )
    if payload.get("req") != binding.request:
        raise InvalidRequestState("requestState belongs to a different request (method, name or arguments changed)")
    data = payload.get("data")
    if not isinstance(data, dict):
        raise InvalidRequestState("requestState is malformed")
    return data
