"""MRTR through ``dispatch``: a tool's questions become input_required results, retries answer them by replay."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_core.dispatch import dispatch
from mcp_core.env import Env, ServerIdentity
from mcp_core.errors import InvalidParams, MissingClientCapability
from mcp_core.mrtr import InputPolicy
from mcp_core.request_state import InvalidRequestState, derive_key
from tests.mcp_core.memory_catalog import MemoryCatalog, RecordingOutbound

pytestmark = pytest.mark.anyio

V = "2026-07-28"
ALL_CAPABILITIES = {"elicitation": {}, "sampling": {}, "roots": {}}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
runs: list[str] = []


async def greet(ctx: Any) -> str:
    runs.append("greet")
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {answer['content']['name']}!"


async def two_rounds(ctx: Any, topic: str = "") -> str:
    first = await ctx.elicit("Name?", NAME_SCHEMA)
    second = await ctx.sample([{"role": "user", "content": {"type": "text", "text": f"About {topic}"}}], 20)
    return f"{first['content']['name']}: {second['content']['text']}"


async def all_at_once(ctx: Any) -> str:
    name, sampled, roots = await asyncio.gather(
        ctx.elicit("Name?", NAME_SCHEMA, key="user_name"),
        ctx.sample([{"role": "user", "content": {"type": "text", "text": "Greet"}}], 50, key="greeting"),
        ctx.list_roots(key="client_roots"),
    )
    return f"{name['content']['name']} / {sampled['content']['text']} / {len(roots)} roots"


async def swallows(ctx: Any) -> str:
    try:
        await ctx.elicit("Name?", NAME_SCHEMA)
    except Exception:
        return "swallowed"
    return "answered"


async def briefing(ctx: Any, topic: str) -> dict[str, Any]:
    runs.append("briefing")
    answer = await ctx.elicit("Who is the audience?", AUDIENCE_SCHEMA, key="audience")
    text = f"Brief {answer['content']['audience']} on {topic}."
    return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "description": "Rendered"}


AUDIENCE_SCHEMA = {"type": "object", "properties": {"audience": {"type": "string"}}, "required": ["audience"]}
BRIEFING = {"name": "briefing", "arguments": [{"name": "topic", "required": True}]}


async def connect(ctx: Any) -> str:
    # A new elicitation id (and URL) on every run, as a URL-mode flow is started afresh each time.
    runs.append("connect")
    flow = f"flow-{len(runs)}"
    answer = await ctx.elicit_url("Connect your account", f"https://accounts.example/{flow}", flow)
    return f"connect: {answer['action']}"


def catalog() -> MemoryCatalog:
    found = MemoryCatalog()
    for name, fn in (
        ("greet", greet),
        ("two_rounds", two_rounds),
        ("all_at_once", all_at_once),
        ("swallows", swallows),
        ("connect", connect),
    ):
        found.add_tool({"name": name, "description": name, "inputSchema": {"type": "object"}}, fn)
    found.add_prompt_function(BRIEFING, briefing)
    return found


def policy(*, tenant: str = "1", now: float = 1_000.0, principal: str = "anonymous") -> InputPolicy:
    return InputPolicy(
        keys=(derive_key("secret", "mrtr-tests"),), now=now, ttl=60.0, tenant=tenant, principal=principal
    )


def env(*, capabilities: dict[str, Any] | None = None, **kwargs: Any) -> Env:
    kwargs.setdefault("input_policy", policy())
    return Env(
        version=V,
        catalog=catalog(),
        outbound=RecordingOutbound(),
        server=ServerIdentity("srv", "1.0"),
        client_capabilities=ALL_CAPABILITIES if capabilities is None else capabilities,
        **kwargs,
    )


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def sampled(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m", "stopReason": "endTurn"}


async def test_a_question_becomes_an_input_required_result_with_sealed_state():
    result = await dispatch("tools/call", {"name": "greet", "arguments": {}}, env())
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == {
        "user_name": {
            "method": "elicitation/create",
            "params": {"message": "What is your name?", "requestedSchema": NAME_SCHEMA},
        }
    }
    assert isinstance(result["requestState"], str)
    assert "_meta" in result and "ttlMs" not in result


async def test_the_retry_replays_the_tool_with_the_answer():
    runs.clear()
    first = await dispatch("tools/call", {"name": "greet"}, env())
    retry = {
        "name": "greet",
        "inputResponses": {"user_name": accept(name="Ada")},
        "requestState": first["requestState"],
    }
    result = await dispatch("tools/call", retry, env())
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert runs == ["greet", "greet"], "the tool runs again from the start"


async def test_a_url_elicitation_asked_again_under_a_new_id_takes_the_answer_given_to_the_first():
    runs.clear()
    capabilities = {"elicitation": {"form": {}, "url": {}}}
    first = await dispatch("tools/call", {"name": "connect"}, env(capabilities=capabilities))
    assert first["inputRequests"]["input-1"]["params"]["elicitationId"] == "flow-1"
    retry = {
        "name": "connect",
        "inputResponses": {"input-1": {"action": "accept"}},
        "requestState": first["requestState"],
    }
    result = await dispatch("tools/call", retry, env(capabilities=capabilities))
    assert result["resultType"] == "complete", result
    assert result["content"] == [{"type": "text", "text": "connect: accept"}]
    assert runs == ["connect", "connect"]


async def test_answers_of_earlier_rounds_travel_in_the_state_and_keys_follow_call_order():
    call = {"name": "two_rounds", "arguments": {"topic": "owls"}}
    first = await dispatch("tools/call", call, env())
    assert list(first["inputRequests"]) == ["input-1"]
    second = await dispatch(
        "tools/call",
        {**call, "inputResponses": {"input-1": accept(name="Ada")}, "requestState": first["requestState"]},
        env(),
    )
    assert second["resultType"] == "input_required"
    assert [(k, q["method"]) for k, q in second["inputRequests"].items()] == [("input-2", "sampling/createMessage")]
    assert second["requestState"] != first["requestState"]
    # Round three answers only the new question: the first answer comes from the state.
    third = await dispatch(
        "tools/call",
        {**call, "inputResponses": {"input-2": sampled("Hoo.")}, "requestState": second["requestState"]},
        env(),
    )
    assert third["content"] == [{"type": "text", "text": "Ada: Hoo."}]


async def test_concurrent_questions_are_asked_together():
    first = await dispatch("tools/call", {"name": "all_at_once"}, env())
    assert {k: q["method"] for k, q in first["inputRequests"].items()} == {
        "user_name": "elicitation/create",
        "greeting": "sampling/createMessage",
        "client_roots": "roots/list",
    }
    answers = {"user_name": accept(name="Ada"), "greeting": sampled("Hi"), "client_roots": {"roots": []}}
    done = await dispatch(
        "tools/call",
        {"name": "all_at_once", "inputResponses": answers, "requestState": first["requestState"]},
        env(),
    )
    assert done["content"][0]["text"] == "Ada / Hi / 0 roots"


async def test_a_missing_answer_is_asked_again_and_unknown_keys_are_ignored():
    first = await dispatch("tools/call", {"name": "greet"}, env())
    again = await dispatch(
        "tools/call",
        {"name": "greet", "inputResponses": {"wrong_key": accept(name="x")}, "requestState": first["requestState"]},
        env(),
    )
    assert again["resultType"] == "input_required" and list(again["inputRequests"]) == ["user_name"]


async def test_answers_sent_up_front_without_state_are_used():
    responses = {"user_name": accept(name="Ada"), "extra": accept(foo="bar")}
    result = await dispatch("tools/call", {"name": "greet", "inputResponses": responses}, env())
    assert result["content"][0]["text"] == "Hello, Ada!"


async def test_a_tool_that_catches_exceptions_still_yields_input_required():
    result = await dispatch("tools/call", {"name": "swallows"}, env())
    assert result["resultType"] == "input_required"


@pytest.mark.parametrize(
    "bad",
    [
        {"inputResponses": None},
        {"inputResponses": {"user_name": 12345}},
        {"inputResponses": {"user_name": {"action": "maybe"}}},
        {"requestState": 42},
    ],
)
async def test_malformed_inputs_are_invalid_params(bad):
    with pytest.raises(InvalidParams):
        await dispatch("tools/call", {"name": "greet", **bad}, env())


async def test_tampered_state_is_rejected():
    first = await dispatch("tools/call", {"name": "greet"}, env())
    retry = {"name": "greet", "inputResponses": {"user_name": accept(name="Ada")}}
    with pytest.raises(InvalidRequestState, match="integrity"):
        await dispatch("tools/call", {**retry, "requestState": first["requestState"] + "-TAMPERED"}, env())


async def test_state_is_bound_to_tenant_arguments_and_time():
    first = await dispatch("tools/call", {"name": "two_rounds", "arguments": {"topic": "owls"}}, env())
    retry = {
        "name": "two_rounds",
        "inputResponses": {"input-1": accept(name="Ada")},
        "requestState": first["requestState"],
    }
    with pytest.raises(InvalidRequestState, match="another server"):
        await dispatch("tools/call", {**retry, "arguments": {"topic": "owls"}}, env(input_policy=policy(tenant="2")))
    with pytest.raises(InvalidRequestState, match="different request"):
        await dispatch("tools/call", {**retry, "arguments": {"topic": "cats"}}, env())
    with pytest.raises(InvalidRequestState, match="expired"):
        await dispatch("tools/call", {**retry, "arguments": {"topic": "owls"}}, env(input_policy=policy(now=1_060.0)))


async def test_only_declared_capabilities_are_asked():
    with pytest.raises(MissingClientCapability) as caught:
        await dispatch("tools/call", {"name": "greet"}, env(capabilities={"sampling": {}}))
    assert caught.value.data == {"requiredCapabilities": {"elicitation": {}}}


async def test_list_methods_never_answer_input_required():
    result = await dispatch("tools/list", {"inputResponses": {"x": {}}}, env())
    assert result["resultType"] == "complete"


# ---- prompts/get ---------------------------------------------------------------------------------------


async def test_a_prompt_that_asks_answers_input_required_and_its_retry_renders_it():
    runs.clear()
    get = {"name": "briefing", "arguments": {"topic": "owls"}}
    first = await dispatch("prompts/get", get, env())
    assert first["resultType"] == "input_required"
    assert first["inputRequests"] == {
        "audience": {
            "method": "elicitation/create",
            "params": {"message": "Who is the audience?", "requestedSchema": AUDIENCE_SCHEMA},
        }
    }
    retry = {**get, "inputResponses": {"audience": accept(audience="pilots")}, "requestState": first["requestState"]}
    done = await dispatch("prompts/get", retry, env())
    assert done["resultType"] == "complete"
    assert done["messages"] == [{"role": "user", "content": {"type": "text", "text": "Brief pilots on owls."}}]
    assert done["description"] == "Rendered"
    assert "ttlMs" not in done, "a result reached through inputResponses is not cacheable"
    assert runs == ["briefing", "briefing"]


async def test_a_prompts_state_is_bound_to_its_name_and_arguments():
    get = {"name": "briefing", "arguments": {"topic": "owls"}}
    first = await dispatch("prompts/get", get, env())
    retry = {"inputResponses": {"audience": accept(audience="pilots")}, "requestState": first["requestState"]}
    with pytest.raises(InvalidRequestState, match="different request"):
        await dispatch("prompts/get", {**get, **retry, "arguments": {"topic": "cats"}}, env())
    with pytest.raises(InvalidRequestState, match="different request"):
        await dispatch("tools/call", {"name": "briefing", "arguments": {"topic": "owls"}, **retry}, env())
    with pytest.raises(InvalidRequestState, match="another principal"):
        await dispatch("prompts/get", {**get, **retry}, env(input_policy=policy(principal="user:2 client:x")))


async def test_a_prompt_asks_only_what_the_client_declared():
    with pytest.raises(MissingClientCapability) as caught:
        await dispatch("prompts/get", {"name": "briefing", "arguments": {"topic": "owls"}}, env(capabilities={}))
    assert caught.value.data == {"requiredCapabilities": {"elicitation": {}}}
