"""The sealed requestState of MRTR: only the exact token the server issued, in time, for the same binding."""

from __future__ import annotations

import pytest

from mcp_core.errors import INVALID_PARAMS
from mcp_core.request_state import (
    InvalidRequestState,
    StateBinding,
    derive_key,
    request_digest,
    seal,
    unseal,
)

KEY = derive_key("django-secret", "mcp_platform.request_state")
NOW = 1_800_000_000.0
TTL = 600.0
CALL = {"name": "book_flight", "arguments": {"to": "ZRH", "seats": 2}}
BINDING = StateBinding(tenant="7", principal="anonymous", request=request_digest("tools/call", CALL))
DATA = {"answers": {"seat": ["digest", {"action": "accept", "content": {"seat": "12A"}}]}, "pending": {}}


def sealed(binding: StateBinding = BINDING) -> str:
    return seal(DATA, binding=binding, key=KEY, now=NOW, ttl=TTL)


def test_a_sealed_state_opens_with_its_data_for_the_same_binding() -> None:
    assert unseal(sealed(), binding=BINDING, keys=[KEY], now=NOW + 1) == DATA


def test_every_bit_flip_anywhere_in_the_token_is_rejected() -> None:
    token = sealed()
    for index, char in enumerate(token):
        for bit in range(7):
            altered = token[:index] + chr(ord(char) ^ (1 << bit)) + token[index + 1 :]
            with pytest.raises(InvalidRequestState):
                unseal(altered, binding=BINDING, keys=[KEY], now=NOW)


def test_truncated_extended_and_appended_tokens_are_rejected() -> None:
    token = sealed()
    for altered in (token[:-1], token + "A", token + "-TAMPERED", token[1:], "", "v1..", token.replace(".", "", 1)):
        with pytest.raises(InvalidRequestState):
            unseal(altered, binding=BINDING, keys=[KEY], now=NOW)


def test_a_state_signed_with_another_key_is_rejected() -> None:
    other = seal(DATA, binding=BINDING, key=derive_key("other-secret", "mcp_platform.request_state"), now=NOW, ttl=TTL)
    with pytest.raises(InvalidRequestState, match="integrity"):
        unseal(other, binding=BINDING, keys=[KEY], now=NOW)


def test_keys_for_other_purposes_differ() -> None:
    assert derive_key("django-secret", "mcp_platform.request_state") != derive_key("django-secret", "sessions")


def test_a_retired_key_still_opens_states_it_sealed() -> None:
    retired = derive_key("old-secret", "mcp_platform.request_state")
    token = seal(DATA, binding=BINDING, key=retired, now=NOW, ttl=TTL)
    assert unseal(token, binding=BINDING, keys=[KEY, retired], now=NOW) == DATA


def test_an_expired_state_is_rejected() -> None:
    token = sealed()
    assert unseal(token, binding=BINDING, keys=[KEY], now=NOW + TTL - 1) == DATA
    with pytest.raises(InvalidRequestState, match="expired"):
        unseal(token, binding=BINDING, keys=[KEY], now=NOW + TTL)


def test_a_state_replayed_to_another_tenant_is_rejected() -> None:
    other_tenant = StateBinding(tenant="8", principal=BINDING.principal, request=BINDING.request)
    with pytest.raises(InvalidRequestState, match="another server"):
        unseal(sealed(), binding=other_tenant, keys=[KEY], now=NOW)


def test_a_state_replayed_by_another_principal_is_rejected() -> None:
    other_principal = StateBinding(tenant=BINDING.tenant, principal="mallory", request=BINDING.request)
    with pytest.raises(InvalidRequestState, match="another principal"):
        unseal(sealed(), binding=other_principal, keys=[KEY], now=NOW)


def test_a_state_replayed_with_different_arguments_is_rejected() -> None:
    changed = {**CALL, "arguments": {"to": "ZRH", "seats": 3}}
    other_request = StateBinding(BINDING.tenant, BINDING.principal, request_digest("tools/call", changed))
    with pytest.raises(InvalidRequestState, match="different request"):
        unseal(sealed(), binding=other_request, keys=[KEY], now=NOW)


def test_the_request_digest_tells_method_name_and_arguments_apart_but_not_key_order() -> None:
    same = {"arguments": {"seats": 2, "to": "ZRH"}, "name": "book_flight", "inputResponses": {"x": {}}}
    assert request_digest("tools/call", same) == BINDING.request
    assert request_digest("prompts/get", CALL) != BINDING.request
    assert request_digest("tools/call", {**CALL, "name": "book_train"}) != BINDING.request


def test_a_rejected_state_is_invalid_params() -> None:
    assert InvalidRequestState("x").code == INVALID_PARAMS
