"""The built-in Python tools behave like the conformance reference server (and the demo tools as documented),
run through ``TenantCatalog`` against a real ``RequestContext`` whose outbound sink records what it is sent.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from mcp_core.content import tool_result
from mcp_core.env import Env, ServerIdentity
from mcp_core.errors import ToolError
from mcp_core.features.tools import call_tool
from tenants.catalog import TenantCatalog
from tenants.models import Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def conformance() -> TenantCatalog:
    call_command("load_conformance_tenant", stdout=io.StringIO())
    return TenantCatalog(Tenant.objects.get(slug="conformance"))


@pytest.fixture
def demo() -> TenantCatalog:
    call_command("load_demo_tenant", stdout=io.StringIO())
    return TenantCatalog(Tenant.objects.get(slug="demo"))


def invoke(catalog: TenantCatalog, name: str, arguments: dict[str, Any], ctx: Any) -> Any:
    definition = async_to_sync(catalog.get_tool)(name)
    assert definition is not None, name
    return async_to_sync(catalog.invoke_tool)(definition, arguments, ctx)


def test_logging_tool_sends_three_info_messages_in_order(conformance: TenantCatalog, make_context: Any) -> None:
    ctx, outbound = make_context(log_level="debug")

    result = invoke(conformance, "test_tool_with_logging", {}, ctx)

    assert outbound.notifications == [
        ("notifications/message", {"level": "info", "data": "Tool execution started"}),
        ("notifications/message", {"level": "info", "data": "Tool processing data"}),
        ("notifications/message", {"level": "info", "data": "Tool execution completed"}),
    ]
    assert result == "Tool with logging executed successfully"


def test_logging_tool_respects_the_clients_level(conformance: TenantCatalog, make_context: Any) -> None:
    ctx, outbound = make_context(log_level="warning")

    invoke(conformance, "test_tool_with_logging", {}, ctx)

    assert outbound.notifications == []


def test_progress_tool_reports_0_50_100_of_100(conformance: TenantCatalog, make_context: Any) -> None:
    ctx, outbound = make_context(progress_token="progress-test-1")

    invoke(conformance, "test_tool_with_progress", {}, ctx)

    assert outbound.notifications == [
        (
            "notifications/progress",
            {
                "progressToken": "progress-test-1",
                "progress": step,
                "total": 100,
                "message": f"Completed step {step} of 100",
            },
        )
        for step in (0, 50, 100)
    ]


def test_progress_tool_without_a_token_sends_nothing(conformance: TenantCatalog, make_context: Any) -> None:
    ctx, outbound = make_context()

    assert invoke(conformance, "test_tool_with_progress", {}, ctx) == "Progress reported"
    assert outbound.notifications == []


def test_error_tool_raises_tool_error(conformance: TenantCatalog, make_context: Any) -> None:
    ctx, _ = make_context()

    with pytest.raises(ToolError, match=r"^This tool intentionally returns an error for testing$"):
        invoke(conformance, "test_error_handling", {}, ctx)


def test_sampling_tool_asks_the_client_and_quotes_the_answer(conformance: TenantCatalog, make_context: Any) -> None:
    answer = {"role": "assistant", "content": {"type": "text", "text": "This is a test response"}, "model": "m"}
    ctx, outbound = make_context(capabilities={"sampling": {}}, answers={"sampling/createMessage": answer})

    result = invoke(conformance, "test_sampling", {"prompt": "Test prompt"}, ctx)

    assert outbound.requests == [
        (
            "sampling/createMessage",
            {"messages": [{"role": "user", "content": {"type": "text", "text": "Test prompt"}}], "maxTokens": 100},
        )
    ]
    assert result == "LLM response: This is a test response"


def test_sampling_tool_without_client_support_says_so(conformance: TenantCatalog, make_context: Any) -> None:
    ctx, outbound = make_context()

    result = invoke(conformance, "test_sampling", {"prompt": "x"}, ctx)

    assert result == "Sampling not supported or error: the client did not declare the 'sampling' capability"
    assert outbound.requests == []


def test_elicitation_tool_sends_the_reference_schema_and_reports_the_answer(
    conformance: TenantCatalog, make_context: Any
) -> None:
    answer = {"action": "accept", "content": {"response": "yes ✓"}}
    ctx, outbound = make_context(capabilities={"elicitation": {}}, answers={"elicitation/create": answer})

    result = invoke(conformance, "test_elicitation", {"message": "Please answer"}, ctx)

    assert outbound.requests == [
        (
            "elicitation/create",
            {
                "message": "Please answer",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"response": {"type": "string", "description": "User's response"}},
                    "required": ["response"],
                },
            },
        )
    ]
    assert result == 'User response: action=accept, content={"response":"yes ✓"}'


def test_sep1034_elicitation_offers_defaults_for_every_primitive(conformance: TenantCatalog, make_context: Any) -> None:
    ctx, outbound = make_context(
        capabilities={"elicitation": {}}, answers={"elicitation/create": {"action": "decline"}}
    )

    result = invoke(conformance, "test_elicitation_sep1034_defaults", {}, ctx)

    ((_, params),) = outbound.requests
    properties = params["requestedSchema"]["properties"]
    assert params["message"] == "Please review and update the form fields with defaults"
    assert {name: p["default"] for name, p in properties.items()} == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }
    assert result == "Elicitation completed: action=decline, content={}"


def test_sep1330_elicitation_offers_all_five_enum_forms(conformance: TenantCatalog, make_context: Any) -> None:
    ctx, outbound = make_context(capabilities={"elicitation": {}}, answers={"elicitation/create": {"action": "cancel"}})

    invoke(conformance, "test_elicitation_sep1330_enums", {}, ctx)

    ((_, params),) = outbound.requests
    properties = params["requestedSchema"]["properties"]
    assert list(properties) == ["untitledSingle", "titledSingle", "legacyEnum", "untitledMulti", "titledMulti"]
    assert properties["legacyEnum"]["enumNames"] == ["Option One", "Option Two", "Option Three"]
    assert properties["titledMulti"]["items"]["anyOf"][0] == {"const": "value1", "title": "First Choice"}


def test_json_schema_tool_echoes_its_arguments_as_compact_json(conformance: TenantCatalog, make_context: Any) -> None:
    ctx, _ = make_context()
    arguments = {"name": "Ada", "address": {"street": "1 Main", "city": "Zürich"}, "email": "ada@example.com"}

    result = invoke(conformance, "json_schema_2020_12_tool", arguments, ctx)

    assert result == (
        'JSON Schema 2020-12 tool called with: {"name":"Ada","address":{"street":"1 Main","city":"Zürich"},'
        '"email":"ada@example.com"}'
    )


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"name": "Ada"}, "is not valid under any of the given schemas"),
        ({"contactMethod": "phone", "email": "ada@example.com"}, "'phone' is a required property"),
        ({"email": "ada@example.com", "address": {"street": 1}}, "address/street: 1 is not of type 'string'"),
        ({"email": "ada@example.com", "age": 36}, "Additional properties are not allowed"),
    ],
)
def test_json_schema_tool_arguments_are_checked_with_composition_conditionals_and_refs(
    conformance: TenantCatalog, make_context: Any, arguments: dict[str, Any], problem: str
) -> None:
    _, outbound = make_context()
    env = Env(version="2025-11-25", catalog=conformance, outbound=outbound, server=ServerIdentity("t", "1"))

    result = async_to_sync(call_tool)({"name": "json_schema_2020_12_tool", "arguments": arguments}, env)

    assert result["isError"] is True
    assert problem in result["content"][0]["text"]


def test_the_input_required_prompt_asks_for_context_and_renders_it(
    conformance: TenantCatalog, make_context: Any
) -> None:
    answer = {"action": "accept", "content": {"context": "test context"}}
    ctx, outbound = make_context(capabilities={"elicitation": {}}, answers={"elicitation/create": answer})
    prompt = async_to_sync(conformance.get_prompt)("test_input_required_result_prompt")
    assert prompt is not None and prompt.wire == {
        "name": "test_input_required_result_prompt",
        "description": "MRTR: prompt that requires elicitation input",
    }

    rendered = async_to_sync(conformance.render_prompt)(prompt, {}, ctx)

    assert outbound.requests == [
        (
            "elicitation/create",
            {
                "message": "What context should the prompt use?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"context": {"type": "string"}},
                    "required": ["context"],
                },
            },
        )
    ]
    assert rendered == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Prompt with context: test context"}}]
    }


def test_static_fixture_tools_return_the_reference_content(conformance: TenantCatalog, make_context: Any) -> None:
    ctx, _ = make_context()

    mixed = tool_result(invoke(conformance, "test_multiple_content_types", {}, ctx))

    assert [item["type"] for item in mixed["content"]] == ["text", "image", "resource"]
    assert json.loads(mixed["content"][2]["resource"]["text"]) == {"test": "data", "value": 123}
    assert "isError" not in mixed


def test_error_fixture_becomes_an_error_result_through_the_protocol(
    conformance: TenantCatalog, make_context: Any
) -> None:
    _, outbound = make_context()
    env = Env(version="2025-11-25", catalog=conformance, outbound=outbound, server=ServerIdentity("t", "1"))

    result = async_to_sync(call_tool)({"name": "test_error_handling"}, env)

    assert result == {
        "content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}],
        "isError": True,
    }


# ---- demo tools --------------------------------------------------------------------------------------


def test_demo_add_returns_structured_content_matching_its_output_schema(demo: TenantCatalog, make_context: Any) -> None:
    _, outbound = make_context()
    env = Env(version="2025-11-25", catalog=demo, outbound=outbound, server=ServerIdentity("t", "1"))

    result = async_to_sync(call_tool)({"name": "add", "arguments": {"a": 2, "b": 3.5}}, env)

    assert result == {"content": [{"type": "text", "text": '{"sum":5.5}'}], "structuredContent": {"sum": 5.5}}


def test_demo_count_slowly_reports_each_step(demo: TenantCatalog, make_context: Any) -> None:
    ctx, outbound = make_context(progress_token=7)

    result = invoke(demo, "count_slowly", {"steps": 3, "delay_ms": 0}, ctx)

    assert [params["progress"] for _, params in outbound.notifications] == [1, 2, 3]
    assert result == "Counted to 3."


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"action": "accept", "content": {"name": " Ada "}}, "Hello, Ada!"),
        ({"action": "decline"}, "You chose not to share your name."),
        ({"action": "cancel"}, "You dismissed the question."),
    ],
)
def test_demo_ask_user_name(demo: TenantCatalog, make_context: Any, answer: dict, expected: str) -> None:
    ctx, _ = make_context(capabilities={"elicitation": {}}, answers={"elicitation/create": answer})

    assert invoke(demo, "ask_user_name", {}, ctx) == expected


def test_demo_summarize_uses_the_clients_model(demo: TenantCatalog, make_context: Any) -> None:
    answer = {"role": "assistant", "content": {"type": "text", "text": "Short."}, "model": "m"}
    ctx, outbound = make_context(capabilities={"sampling": {}}, answers={"sampling/createMessage": answer})

    result = invoke(demo, "summarize", {"text": "A long story.", "max_words": 10}, ctx)

    ((method, params),) = outbound.requests
    assert method == "sampling/createMessage"
    assert params["messages"][0]["content"]["text"].endswith("A long story.")
    assert result == "Short."


def test_demo_list_client_roots(demo: TenantCatalog, make_context: Any) -> None:
    roots = {"roots": [{"uri": "file:///work", "name": "work"}]}
    ctx, _ = make_context(capabilities={"roots": {}}, answers={"roots/list": roots})

    assert invoke(demo, "list_client_roots", {}, ctx) == "The client shares these roots:\n- work: file:///work"
