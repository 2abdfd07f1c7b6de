"""Arguments kept in the log lose what the tool's schema marks writeOnly and anything named like a secret."""

from __future__ import annotations

from mcp_platform.observe.redaction import MAX_ARGUMENT_BYTES, REDACTED, arguments_to_keep, is_secret_name


def test_secret_like_names_are_recognised_and_ordinary_ones_are_not() -> None:
    for name in ("password", "api_key", "X-Api-Key", "access_token", "client_secret", "Authorization", "secretName"):
        assert is_secret_name(name), name
    for name in ("query", "max_tokens", "city", "author"):
        assert not is_secret_name(name), name


def test_write_only_fields_are_redacted_at_any_depth() -> None:
    schema = {
        "type": "object",
        "properties": {
            "pin": {"type": "string", "writeOnly": True},
            "account": {"type": "object", "properties": {"iban": {"type": "string", "writeOnly": True}}},
            "cards": {"type": "array", "items": {"type": "object", "properties": {"cvc": {"writeOnly": True}}}},
        },
    }
    kept = arguments_to_keep(
        {"pin": "1234", "account": {"iban": "DE00", "name": "Ann"}, "cards": [{"cvc": "999"}], "note": "hi"}, schema
    )
    assert kept == {
        "pin": REDACTED,
        "account": {"iban": REDACTED, "name": "Ann"},
        "cards": [{"cvc": REDACTED}],
        "note": "hi",
    }


def test_secret_names_are_redacted_without_a_schema() -> None:
    kept = arguments_to_keep({"user": "ann", "password": "hunter2", "headers": {"authorization": "Bearer x"}}, None)
    assert kept == {"user": "ann", "password": REDACTED, "headers": {"authorization": REDACTED}}


def test_oversized_arguments_are_replaced_by_a_note() -> None:
    kept = arguments_to_keep({"blob": "x" * (MAX_ARGUMENT_BYTES + 1)}, None)
    assert kept is not None and set(kept) == {"_omitted"}
