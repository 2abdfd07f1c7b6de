"""The console's run history: what a finished run leaves behind for the admin who started it (arguments with
secrets redacted, result and exchange bounded in size), the newest runs of a tool for that admin, and one run.

Only the admin who ran it sees a run, and only on the tool's console, which the tool admin scopes to the tenants
the person administers."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from mcp_platform.console.models import ConsoleRunRecord
from mcp_platform.observe.redaction import REDACTED, arguments_to_keep, redact
from tenants.models import Tool

JSONObject = dict[str, Any]

# Runs kept per admin and tool; older ones are deleted as new ones are stored.
KEEP_PER_TOOL = 50
# Runs listed on the console page.
LISTED = 20
# A result larger than this (bytes of its JSON) is stored as a note of its size.
MAX_RESULT_BYTES = 64 * 1024
# One exchanged message larger than this is stored as its envelope and a note of its size.
MAX_MESSAGE_BYTES = 16 * 1024
# The exchange stops being stored after this many messages or bytes (a note says how many were left out).
MAX_EXCHANGE_MESSAGES = 200
MAX_EXCHANGE_BYTES = 256 * 1024


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=str))


def bounded_result(result: JSONObject | None) -> JSONObject | None:
    """``result`` as stored: itself, or a note of its size when it is over ``MAX_RESULT_BYTES``."""
    if result is None:
        return None
    size = _size(result)
    if size > MAX_RESULT_BYTES:
        return {"_omitted": f"{size} bytes of result (over {MAX_RESULT_BYTES})"}
    return result


@dataclass
class Exchange:
    """The JSON-RPC messages of one run, in the order they went, as the page is shown them and as they are stored:
    the arguments of ``tools/call`` and the content of form answers redacted, each message and the whole bounded."""

    input_schema: Any
    messages: list[JSONObject]
    # Messages after the first ``MAX_EXCHANGE_MESSAGES``: counted, not kept (a tool may report progress for hours).
    left_out: int = 0

    @classmethod
    def of(cls, input_schema: Any) -> Exchange:
        return cls(input_schema=input_schema, messages=[])

    def add(self, direction: str, message: JSONObject) -> None:
        if len(self.messages) < MAX_EXCHANGE_MESSAGES:
            self.messages.append({"direction": direction, "message": message})
        else:
            self.left_out += 1

    def stored(self) -> list[JSONObject]:
        kept: list[JSONObject] = []
        total = 0
        schemas: dict[Any, Any] = {}  # a question's requested schema, by its request id, for its answer
        left_out = self.left_out
        for index, item in enumerate(self.messages):
            message = self._redacted(item["message"], schemas)
            size = _size(message)
            if size > MAX_MESSAGE_BYTES:
                envelope: JSONObject = {k: message[k] for k in ("jsonrpc", "id", "method") if k in message}
                message = {**envelope, "_omitted": f"{size} bytes (over {MAX_MESSAGE_BYTES})"}
                size = _size(message)
            if total + size > MAX_EXCHANGE_BYTES:
                left_out += len(self.messages) - index
                break
            total += size
            kept.append({"direction": item["direction"], "message": message})
        if left_out:
            kept.append({"direction": "note", "message": {"_omitted": f"{left_out} more messages"}})
        return kept

    def _redacted(self, message: JSONObject, schemas: dict[Any, Any]) -> JSONObject:
        params = message.get("params")
        if message.get("method") == "tools/call" and isinstance(params, dict) and "arguments" in params:
            return {**message, "params": {**params, "arguments": redact(params["arguments"], self.input_schema)}}
        if message.get("method") == "elicitation/create" and isinstance(params, dict):
            schemas[message.get("id")] = params.get("requestedSchema")
            return message
        result = message.get("result")
        answered = "method" not in message and message.get("id") in schemas
        if answered and isinstance(result, dict) and "content" in result:
            content = redact(result["content"], schemas[message.get("id")])
            return {**message, "result": {**result, "content": content}}
        return message


def rerun_arguments(arguments: JSONObject) -> JSONObject:
    """Stored arguments as a run again starts from them: redacted fields left out, for the person to give again."""

    def keep(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: keep(v) for k, v in value.items() if v != REDACTED}
        if isinstance(value, list):
            return [keep(v) for v in value]
        return value

    kept = keep(arguments)
    return kept if isinstance(kept, dict) and "_omitted" not in kept else {}


@transaction.atomic
def console_run_record(
    *,
    tool: Tool,
    user_id: int,
    run_id: str,
    started_at: dt.datetime,
    duration_ms: float,
    as_task: bool,
    task_id: str,
    outcome: str,
    arguments: JSONObject,
    result: JSONObject | None,
    error: JSONObject | None,
    exchange: Exchange,
) -> ConsoleRunRecord:
    """Store a finished run for the admin who ran it, and delete their runs of the tool beyond ``KEEP_PER_TOOL``."""
    record = ConsoleRunRecord.objects.create(
        tenant_id=tool.tenant_id,
        tool=tool,
        user_id=user_id,
        run_id=run_id,
        started_at=started_at,
        duration_ms=duration_ms,
        as_task=as_task,
        task_id=task_id,
        outcome=outcome,
        arguments=arguments_to_keep(arguments, tool.input_schema) or {},
        result=bounded_result(result),
        error=error,
        exchange=exchange.stored(),
    )
    older = ConsoleRunRecord.objects.filter(tool=tool, user_id=user_id).values_list("pk", flat=True)[KEEP_PER_TOOL:]
    ConsoleRunRecord.objects.filter(pk__in=list(older)).delete()
    return record


def console_runs(*, tool: Tool, user_id: int, limit: int = LISTED) -> list[ConsoleRunRecord]:
    """The admin's latest runs of ``tool``, newest first (without their results and exchanges)."""
    rows = ConsoleRunRecord.objects.filter(tool=tool, user_id=user_id).defer("result", "exchange", "error")
    return list(rows[:limit])


def console_run_get(*, tool: Tool, user_id: int, pk: int) -> ConsoleRunRecord | None:
    """One run of ``tool`` by the admin; None when it is not theirs, not this tool's, or gone."""
    return ConsoleRunRecord.objects.filter(tool=tool, user_id=user_id, pk=pk).first()


def run_summary(record: ConsoleRunRecord) -> JSONObject:
    """A run as the history list shows it."""
    return {
        "id": record.pk,
        "startedAt": record.started_at.isoformat(),
        "outcome": record.outcome,
        "outcomeLabel": record.get_outcome_display(),
        "durationMs": record.duration_ms,
        "asTask": record.as_task,
        "arguments": record.arguments,
        "rerunArguments": rerun_arguments(record.arguments),
    }
