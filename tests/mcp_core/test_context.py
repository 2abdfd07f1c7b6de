"""What a request's context says of the client's capabilities, and what it raises for one the client lacks."""

from __future__ import annotations

import pytest

from mcp_core.context import RequestContext
from mcp_core.errors import ClientRequestFailed, MissingClientCapability
from tests.mcp_core.memory_catalog import RecordingOutbound

DECLARED = {"roots": {"listChanged": False}, "elicitation": {"url": {}}, "sampling": {}}


def context(*, stateless: bool) -> RequestContext:
    return RequestContext(outbound=RecordingOutbound(), client_capabilities=DECLARED, arguments={}, stateless=stateless)


def test_a_sub_capability_is_declared_by_naming_it_and_a_false_flag_declares_nothing() -> None:
    ctx = context(stateless=True)
    assert ctx.client_declares("roots") and not ctx.client_declares("roots", "listChanged")
    assert ctx.client_declares("elicitation", "url") and not ctx.client_declares("elicitation", "form")
    assert ctx.client_declares("sampling") and not ctx.client_declares("sampling", "tools")
    assert not ctx.client_declares("tasks")


def test_a_missing_capability_is_a_protocol_error_at_2026_07_28_and_a_failed_request_before() -> None:
    context(stateless=True).require("elicitation", "url")
    with pytest.raises(MissingClientCapability) as missing:
        context(stateless=True).require("elicitation", "form")
    assert missing.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    with pytest.raises(ClientRequestFailed, match="did not declare the 'tasks' capability"):
        context(stateless=False).require("tasks")
    with pytest.raises(ClientRequestFailed, match=r"did not declare roots\.listChanged"):
        context(stateless=False).require("roots", "listChanged")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("stateless", "declared", "sent"),
    [
        (False, DECLARED, [("notifications/elicitation/complete", {"elicitationId": "flow-1"})]),
        # A client that cannot be sent to a URL has nothing to hear about.
        (False, {"elicitation": {"form": {}}}, []),
        # The 2026-07-28 era has no such notice: its client retries with the answer.
        (True, DECLARED, []),
    ],
)
async def test_the_completion_of_a_url_elicitation_is_told_only_where_the_era_and_the_client_have_it(
    stateless: bool, declared: dict[str, object], sent: list[tuple[str, object]]
) -> None:
    outbound = RecordingOutbound()
    ctx = RequestContext(outbound=outbound, client_capabilities=declared, arguments={}, stateless=stateless)
    await ctx.elicitation_complete("flow-1")
    assert outbound.notifications == sent
