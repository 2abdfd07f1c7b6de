"""What a console run leaves in the history: the exchange with secrets redacted (the call's arguments by the tool's
schema, a form answer by the question's), each message and the whole bounded, a large result replaced by its size,
and a run again without the redacted values."""

from __future__ import annotations

from typing import Any

from mcp_platform.console.history import (
    MAX_EXCHANGE_BYTES,
    MAX_EXCHANGE_MESSAGES,
    MAX_MESSAGE_BYTES,
    MAX_RESULT_BYTES,
    Exchange,
    bounded_result,
    rerun_arguments,
)

SCHEMA = {"type": "object", "properties": {"order": {"type": "string"}, "pin": {"type": "string", "writeOnly": True}}}


def call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": "r", "method": "tools/call", "params": {"name": "t", "arguments": arguments}}


def test_the_calls_secrets_and_a_forms_secret_answer_are_redacted() -> None:
    exchange = Exchange.of(SCHEMA)
    exchange.add("sent", call({"order": "A-1", "pin": "1234", "api_key": "k"}))
    question = {"type": "object", "properties": {"password": {"type": "string"}, "name": {"type": "string"}}}
    exchange.add(
        "received",
        {
            "jsonrpc": "2.0",
            "id": "q1",
            "method": "elicitation/create",
            "params": {"message": "Sign in", "requestedSchema": question},
        },
    )
    exchange.add(
        "sent",
        {
            "jsonrpc": "2.0",
            "id": "q1",
            "result": {"action": "accept", "content": {"name": "Cora", "password": "hunter2"}},
        },
    )
    exchange.add("received", {"jsonrpc": "2.0", "id": "r", "result": {"content": []}})

    stored = exchange.stored()

    assert stored[0]["message"]["params"]["arguments"] == {"order": "A-1", "pin": "[redacted]", "api_key": "[redacted]"}
    assert stored[2]["message"]["result"]["content"] == {"name": "Cora", "password": "[redacted]"}
    assert [m["direction"] for m in stored] == ["sent", "received", "sent", "received"]
    assert exchange.messages[0]["message"]["params"]["arguments"]["pin"] == "1234"  # the page saw it as it went


def test_a_long_exchange_keeps_its_first_messages_and_says_how_many_more_there_were() -> None:
    exchange = Exchange.of(SCHEMA)
    for step in range(MAX_EXCHANGE_MESSAGES + 25):
        exchange.add("received", {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": step}})

    stored = exchange.stored()

    assert len(exchange.messages) == MAX_EXCHANGE_MESSAGES  # bounded while the run goes on, too
    assert len(stored) == MAX_EXCHANGE_MESSAGES + 1
    assert stored[-1] == {"direction": "note", "message": {"_omitted": "25 more messages"}}


def test_a_large_message_keeps_its_envelope_and_the_whole_stays_under_its_cap() -> None:
    exchange = Exchange.of(SCHEMA)
    exchange.add("received", {"jsonrpc": "2.0", "id": "r", "result": {"text": "x" * MAX_MESSAGE_BYTES}})
    for _ in range(40):
        exchange.add("received", {"jsonrpc": "2.0", "method": "n", "params": {"text": "y" * (MAX_MESSAGE_BYTES - 100)}})

    stored = exchange.stored()

    assert stored[0]["message"]["id"] == "r" and "bytes (over" in stored[0]["message"]["_omitted"]
    assert sum(len(str(m)) for m in stored) < MAX_EXCHANGE_BYTES * 1.1
    assert stored[-1]["direction"] == "note"


def test_a_large_result_is_replaced_by_its_size() -> None:
    small = {"content": [{"type": "text", "text": "ok"}]}

    assert bounded_result(small) == small
    assert "bytes of result" in bounded_result({"text": "x" * MAX_RESULT_BYTES})["_omitted"]
    assert bounded_result(None) is None


def test_a_run_again_leaves_the_redacted_values_out() -> None:
    kept = {"order": "A-1", "pin": "[redacted]", "address": {"street": "Main", "token": "[redacted]"}}

    assert rerun_arguments(kept) == {"order": "A-1", "address": {"street": "Main"}}
    assert rerun_arguments({"_omitted": "20000 bytes of arguments (over 16384)"}) == {}
