"""The observation seam: outcome classification and the calls hooks receive."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from mcp_core.errors import InvalidParams, McpError
from mcp_platform.observe.calls import (
    CallInfo,
    CallRecord,
    classify,
    hooks_registered,
    observed_call,
    register_hook,
    unregister_hook,
)


class TooMany(McpError):
    code = -32029
    http_status = 429


class Recorder:
    """A hook that keeps what it is told."""

    def __init__(self) -> None:
        self.begun: list[CallInfo] = []
        self.ended: list[tuple[CallRecord, object]] = []

    def started(self, info: CallInfo) -> object:
        self.begun.append(info)
        return f"token-{len(self.begun)}"

    def finished(self, record: CallRecord, token: object) -> None:
        self.ended.append((record, token))


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    hook = Recorder()
    register_hook(hook)
    yield hook
    unregister_hook(hook)


def info(method: str = "tools/call") -> CallInfo:
    return CallInfo(
        tenant_id=1,
        tenant_slug="acme",
        method=method,
        target="echo",
        principal="",
        client_id="",
        client_name="",
        client_version="",
        protocol_version="2026-07-28",
        transport="streamable-http",
        request_id="1",
        started=time.perf_counter(),
        started_at=time.time(),
        arguments=None,
        headers=None,
    )


def test_outcomes_are_classified_from_result_or_exception() -> None:
    assert classify(result={"content": []}) == ("ok", None)
    assert classify(result={"content": [], "isError": True}) == ("tool_error", None)
    assert classify(error=InvalidParams("bad")) == ("error", -32602)
    assert classify(error=RuntimeError("boom")) == ("error", -32603)
    assert classify(error=TooMany("slow down")) == ("rate_limited", -32029)
    assert classify(error=asyncio.CancelledError()) == ("cancelled", None)


def test_a_registered_hook_is_counted_once(recorder: Recorder) -> None:
    register_hook(recorder)
    assert hooks_registered()
    with observed_call(info()) as call:
        call.succeed({})
    assert len(recorder.ended) == 1


def test_a_hook_gets_its_token_back_with_the_record(recorder: Recorder) -> None:
    with observed_call(info()) as call:
        call.succeed({"content": [], "isError": True})
    [(record, token)] = recorder.ended
    assert token == "token-1"
    assert record.outcome == "tool_error" and record.duration_s >= 0


@pytest.mark.anyio
async def test_an_exception_leaving_the_block_is_recorded_and_still_raised(recorder: Recorder) -> None:
    with pytest.raises(InvalidParams):
        async with observed_call(info()):
            raise InvalidParams("no such tool")
    [(record, _)] = recorder.ended
    assert (record.outcome, record.error_code) == ("error", -32602)


def test_a_failing_hook_does_not_break_the_call(recorder: Recorder) -> None:
    class Broken:
        def started(self, info: CallInfo) -> object:
            raise RuntimeError("hook bug")

        def finished(self, record: CallRecord, token: object) -> None:
            raise RuntimeError("hook bug")

    broken = Broken()
    register_hook(broken)
    try:
        with observed_call(info()) as call:
            call.succeed({})
    finally:
        unregister_hook(broken)
    assert [record.outcome for record, _ in recorder.ended] == ["ok"]
