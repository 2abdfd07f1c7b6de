"""What a request's context says of the client's capabilities, what it raises for one the client lacks, and how it
sends the person to a page in each era (``require_url_visit``)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_core.context import RequestContext, ToolContext
from mcp_core.dispatch import dispatch
from mcp_core.env import Env, ServerIdentity
from mcp_core.errors import (
    ClientRequestFailed,
    MissingClientCapability,
    ToolError,
    UrlElicitationRequired,
    error_to_wire,
)
from mcp_core.features.tools import run_task_call
from mcp_core.mrtr import Answer, InputLedger, InputPolicy, InputRequired, question_digest
from mcp_core.request_state import derive_key
from mcp_core.tasks import TaskEvent
from tests.mcp_core.memory_catalog import MemoryCatalog, RecordingOutbound

V2026 = "2026-07-28"
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


# ---- sending the person to a page: require_url_visit in each era ------------------------------------------

URL_DECLARED = {"elicitation": {"form": {}, "url": {}}}
FORM_ONLY = {"elicitation": {"form": {}}}


def visit_context(*, capabilities: dict[str, object], stateless: bool, ledger: InputLedger | None) -> RequestContext:
    return RequestContext(
        outbound=RecordingOutbound(), client_capabilities=capabilities, arguments={}, stateless=stateless, ledger=ledger
    )


async def visit(ctx: RequestContext, run: int = 1) -> None:
    # A new link and id on every run, as a connect flow is started afresh each time.
    await ctx.require_url_visit("Connect your Example account.", f"https://platform.example/connect/{run}", f"e-{run}")


@pytest.mark.anyio
@pytest.mark.parametrize("stateless", [True, False], ids=["2026-07-28 request", "task run"])
async def test_where_a_ledger_answers_the_visit_is_a_url_question_and_accept_returns(stateless: bool) -> None:
    ledger = InputLedger()
    with pytest.raises(InputRequired):
        await visit(visit_context(capabilities=URL_DECLARED, stateless=stateless, ledger=ledger))
    asked = ledger.asked["input-1"]
    assert asked == {
        "method": "elicitation/create",
        "params": {
            "mode": "url",
            "message": "Connect your Example account.",
            "url": "https://platform.example/connect/1",
            "elicitationId": "e-1",
        },
    }

    # The next run asks under another link and id: the answer to the first still applies (same key, same question).
    digest = question_digest("elicitation/create", asked["params"])
    answered = InputLedger(answers={"input-1": Answer(digest, {"action": "accept"})})
    await visit(visit_context(capabilities=URL_DECLARED, stateless=stateless, ledger=answered), run=2)
    assert answered.used["input-1"].result == {"action": "accept"}


@pytest.mark.anyio
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_person_who_declines_the_visit_fails_the_tool_saying_so(action: str) -> None:
    ledger = InputLedger(answers={"input-1": Answer(None, {"action": action})})
    with pytest.raises(ToolError, match=r"declined to open https://platform\.example/connect/1"):
        await visit(visit_context(capabilities=URL_DECLARED, stateless=True, ledger=ledger))


@pytest.mark.anyio
async def test_a_handshake_request_of_a_client_that_takes_urls_is_the_url_elicitation_required_error() -> None:
    with pytest.raises(UrlElicitationRequired) as raised:
        await visit(visit_context(capabilities=URL_DECLARED, stateless=False, ledger=None))
    assert raised.value.code == -32042
    assert raised.value.data == {
        "elicitations": [
            {
                "mode": "url",
                "message": "Connect your Example account.",
                "url": "https://platform.example/connect/1",
                "elicitationId": "e-1",
            }
        ]
    }


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("capabilities", "stateless", "ledger"),
    [
        (FORM_ONLY, False, None),
        ({}, False, None),
        (FORM_ONLY, True, InputLedger()),
        (FORM_ONLY, False, InputLedger()),
        # A 2026-07-28 request whose shell answers no questions cannot ask, and has no -32042.
        (URL_DECLARED, True, None),
    ],
    ids=["handshake, form only", "handshake, no elicitation", "2026-07-28", "task run", "2026-07-28, no ledger"],
)
async def test_a_client_that_cannot_be_sent_to_a_page_gets_a_failed_tool_carrying_the_link(
    capabilities: dict[str, object], stateless: bool, ledger: InputLedger | None
) -> None:
    with pytest.raises(ToolError, match=r"open https://platform\.example/connect/1 to continue"):
        await visit(visit_context(capabilities=capabilities, stateless=stateless, ledger=ledger))
    assert ledger is None or not ledger.asked


# ---- ... and as the client sees it, through dispatch ------------------------------------------------------

CONNECTED: set[str] = set()
RUNS: list[str] = []


async def connected_account(ctx: ToolContext) -> str:
    """A tool that needs the person's account: it sends them to connect it (a new link each run), then checks again."""
    RUNS.append("account")
    if "ada" not in CONNECTED:
        run = len(RUNS)
        await ctx.require_url_visit("Connect your Example account.", f"https://x.example/c/{run}", f"e-{run}")
    return "connected" if "ada" in CONNECTED else "still not connected"


def dispatch_env(version: str, capabilities: dict[str, object], **kwargs: Any) -> Env:
    found = MemoryCatalog()
    found.add_tool({"name": "account", "inputSchema": {"type": "object"}}, connected_account)
    return Env(
        version=version,
        catalog=found,
        outbound=RecordingOutbound(),
        server=ServerIdentity("srv", "1.0"),
        client_capabilities=capabilities,
        **kwargs,
    )


@pytest.mark.anyio
async def test_a_handshake_call_answers_the_url_elicitation_required_error_and_not_a_result() -> None:
    CONNECTED.clear()
    RUNS.clear()
    with pytest.raises(UrlElicitationRequired) as raised:
        await dispatch("tools/call", {"name": "account"}, dispatch_env("2025-11-25", URL_DECLARED))
    status, error = error_to_wire(raised.value)
    assert status == 200 and error["code"] == -32042
    assert error["data"]["elicitations"][0]["url"] == "https://x.example/c/1"


@pytest.mark.anyio
async def test_a_2026_call_asks_the_visit_and_its_retry_with_accept_checks_again() -> None:
    CONNECTED.clear()
    RUNS.clear()
    policy = InputPolicy(keys=(derive_key("s", "url"),), now=1_000.0, ttl=60.0, tenant="t", principal="p")

    async def call(params: dict[str, Any]) -> dict[str, Any]:
        return await dispatch("tools/call", params, dispatch_env(V2026, URL_DECLARED, input_policy=policy))

    first = await call({"name": "account"})
    assert first["resultType"] == "input_required"
    (key, question), *_ = first["inputRequests"].items()
    assert question["params"]["mode"] == "url"
    retry = {"name": "account", "inputResponses": {key: {"action": "accept"}}, "requestState": first["requestState"]}
    # The retry's run asks under a new link and id; the answer still applies, and the tool checks again.
    not_yet = await call(retry)
    CONNECTED.add("ada")  # the person connects on the page
    done = await call(retry)
    assert not_yet["content"] == [{"type": "text", "text": "still not connected"}]
    assert done["resultType"] == "complete" and done["content"] == [{"type": "text", "text": "connected"}]


@pytest.mark.anyio
async def test_a_task_run_asks_the_visit_as_an_open_question_and_never_raises_the_error() -> None:
    CONNECTED.clear()
    RUNS.clear()
    outcome = await run_task_call("account", {}, dispatch_env("2025-11-25", URL_DECLARED, ledger=InputLedger()))
    assert outcome.event is TaskEvent.NEEDS_INPUT
    assert outcome.questions["input-1"]["params"]["url"] == "https://x.example/c/1"
