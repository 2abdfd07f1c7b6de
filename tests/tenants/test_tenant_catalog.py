"""``TenantCatalog`` speaks wire shapes, runs backends, matches templates and completes, per tenant."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from mcp_core.catalog import Catalog, PromptDefinition
from mcp_core.tasks import TaskSupport
from tenants.catalog import TenantCatalog
from tenants.models import Backend, Tenant
from tests.factories import PromptFactory, ResourceFactory, ResourceTemplateFactory, ToolFactory

pytestmark = pytest.mark.django_db

SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
    "properties": {"at": {"$ref": "#/$defs/point"}},
    "additionalProperties": False,
}


def test_tenant_catalog_implements_every_catalog_method_sync_or_async_alike() -> None:
    names = [name for name in vars(Catalog) if not name.startswith("_")]

    assert "invoke_tool" in names
    for name in names:
        declared = inspect.iscoroutinefunction(getattr(Catalog, name))
        assert inspect.iscoroutinefunction(getattr(TenantCatalog, name)) is declared, name


def test_tool_wire_leaves_out_empty_optional_fields_and_keeps_the_schema_as_stored(tenant: Tenant) -> None:
    ToolFactory(tenant=tenant, name="plain", description="", input_schema=SCHEMA_2020_12)

    page = async_to_sync(TenantCatalog(tenant).list_tools)(after=None, limit=10)

    assert page.items == [{"name": "plain", "description": "", "inputSchema": SCHEMA_2020_12}]
    assert (page.has_more, page.last_key) == (False, "plain")


def test_tool_wire_carries_every_optional_field_that_is_set(tenant: Tenant) -> None:
    ToolFactory(
        tenant=tenant,
        name="full",
        title="Full",
        description="Everything",
        output_schema={"type": "object"},
        annotations={"readOnlyHint": True},
        icons=[{"src": "https://example.com/i.png", "mimeType": "image/png"}],
    )

    tool = async_to_sync(TenantCatalog(tenant).get_tool)("full")

    assert tool is not None
    assert tool.wire == {
        "name": "full",
        "title": "Full",
        "description": "Everything",
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
        "icons": [{"src": "https://example.com/i.png", "mimeType": "image/png"}],
    }


def test_task_support_appears_as_execution_and_on_the_definition(tenant: Tenant) -> None:
    ToolFactory(tenant=tenant, name="long", task_support="optional")
    ToolFactory(tenant=tenant, name="short")
    ToolFactory(
        tenant=tenant,
        name="asks_first",
        backend=Backend.PYTHON,
        config={"function": "conformance.tool_with_task"},
        task_support="required",
    )
    catalog = TenantCatalog(tenant)

    long, short, asks_first = (async_to_sync(catalog.get_tool)(name) for name in ("long", "short", "asks_first"))

    assert long is not None and short is not None and asks_first is not None
    assert long.wire["execution"] == {"taskSupport": "optional"} and long.task_support == TaskSupport.OPTIONAL
    assert "execution" not in short.wire and short.task_support == TaskSupport.FORBIDDEN
    assert (long.continues_as_task, asks_first.continues_as_task) == (False, True)


def test_list_tools_reports_more_and_the_last_key(tenant: Tenant) -> None:
    for name in ["a", "b", "c"]:
        ToolFactory(tenant=tenant, name=name)

    page = async_to_sync(TenantCatalog(tenant).list_tools)(after="a", limit=1)

    assert [t["name"] for t in page.items] == ["b"]
    assert (page.has_more, page.last_key) == (True, "b")


def test_another_tenants_catalog_shows_nothing_of_this_one(tenant: Tenant, other_tenant: Tenant) -> None:
    ToolFactory(tenant=tenant, name="secret")
    ResourceFactory(tenant=tenant, uri="docs://secret")
    ResourceTemplateFactory(tenant=tenant, uri_template="docs://{x}")
    PromptFactory(tenant=tenant, name="secret", completions={"topic": ["a"]})
    theirs = TenantCatalog(other_tenant)

    assert async_to_sync(theirs.list_tools)(after=None, limit=10).items == []
    assert async_to_sync(theirs.get_tool)("secret") is None
    assert async_to_sync(theirs.list_resources)(after=None, limit=10).items == []
    assert async_to_sync(theirs.read_resource)("docs://secret", None) is None
    assert async_to_sync(theirs.list_resource_templates)(after=None, limit=10).items == []
    assert async_to_sync(theirs.get_prompt)("secret") is None
    assert async_to_sync(theirs.complete)({"type": "ref/prompt", "name": "secret"}, {"name": "topic"}, {}) is None


def test_invoking_a_tool_of_another_tenant_is_refused(tenant: Tenant, other_tenant: Tenant, make_context: Any) -> None:
    ToolFactory(tenant=tenant, name="mine")
    definition = async_to_sync(TenantCatalog(tenant).get_tool)("mine")
    ctx, _ = make_context()

    with pytest.raises(ValueError, match="does not belong to tenant 'globex'"):
        async_to_sync(TenantCatalog(other_tenant).invoke_tool)(definition, {}, ctx)


def test_static_tool_returns_its_stored_result(tenant: Tenant, make_context: Any) -> None:
    ToolFactory(
        tenant=tenant,
        name="fixed",
        output_schema={"type": "object"},
        config={"content": [{"type": "text", "text": "{}"}], "isError": False, "structuredContent": {}},
    )
    ToolFactory(tenant=tenant, name="broken", config={"content": [{"type": "text", "text": "no"}], "isError": True})
    catalog = TenantCatalog(tenant)
    ctx, _ = make_context()

    def call(name: str) -> Any:
        definition = async_to_sync(catalog.get_tool)(name)
        return async_to_sync(catalog.invoke_tool)(definition, {}, ctx)

    assert call("fixed") == {"content": [{"type": "text", "text": "{}"}], "structuredContent": {}}
    assert call("broken") == {"content": [{"type": "text", "text": "no"}], "isError": True}


def test_a_static_tools_result_is_a_copy_the_caller_may_change(tenant: Tenant, make_context: Any) -> None:
    stored = {"content": [{"type": "text", "text": "n"}], "structuredContent": {"n": 10**30, "list": [1]}}
    ToolFactory(tenant=tenant, name="fixed", output_schema={"type": "object"}, config=stored)
    catalog = TenantCatalog(tenant)
    definition = async_to_sync(catalog.get_tool)("fixed")
    ctx, _ = make_context()

    first = async_to_sync(catalog.invoke_tool)(definition, {}, ctx)
    first["content"][0]["text"] = "changed"
    first["structuredContent"]["list"].append(2)
    second = async_to_sync(catalog.invoke_tool)(definition, {}, ctx)

    assert second == {"content": [{"type": "text", "text": "n"}], "structuredContent": {"n": 10**30, "list": [1]}}


def test_python_tool_gets_its_arguments(tenant: Tenant, make_context: Any) -> None:
    ToolFactory(tenant=tenant, name="echo", backend=Backend.PYTHON, config={"function": "demo.echo"})
    catalog = TenantCatalog(tenant)
    ctx, _ = make_context(arguments={"message": "hello"})

    definition = async_to_sync(catalog.get_tool)("echo")

    assert async_to_sync(catalog.invoke_tool)(definition, {"message": "hello"}, ctx) == "hello"


def test_resource_wire_and_contents(tenant: Tenant) -> None:
    ResourceFactory(
        tenant=tenant,
        uri="docs://logo",
        name="logo",
        title="Logo",
        mime_type="image/png",
        text=None,
        blob="AAEC",
        annotations={"audience": ["user"]},
    )
    ResourceFactory(tenant=tenant, uri="docs://note", name="note", mime_type="", text="Hi")
    catalog = TenantCatalog(tenant)

    page = async_to_sync(catalog.list_resources)(after=None, limit=10)

    assert page.items == [
        {
            "uri": "docs://logo",
            "name": "logo",
            "title": "Logo",
            "mimeType": "image/png",
            "annotations": {"audience": ["user"]},
        },
        {"uri": "docs://note", "name": "note"},
    ]
    assert page.last_key == "docs://note"
    assert async_to_sync(catalog.read_resource)("docs://logo", None) == [
        {"uri": "docs://logo", "mimeType": "image/png", "blob": "AAEC"}
    ]
    assert async_to_sync(catalog.read_resource)("docs://note", None) == [{"uri": "docs://note", "text": "Hi"}]


def test_static_template_substitutes_variables_and_leaves_json_braces(tenant: Tenant) -> None:
    ResourceTemplateFactory(
        tenant=tenant,
        name="user",
        uri_template="users://{org}/{id}",
        mime_type="application/json",
        config={"text": '{"org": "{org}", "id": "{id}", "unknown": "{other}"}'},
    )

    contents = async_to_sync(TenantCatalog(tenant).read_resource)("users://acme/42", None)

    assert contents == [
        {
            "uri": "users://acme/42",
            "mimeType": "application/json",
            "text": '{"org": "acme", "id": "42", "unknown": "{other}"}',
        }
    ]


def test_template_value_holding_a_placeholder_is_not_expanded_again(tenant: Tenant) -> None:
    ResourceTemplateFactory(tenant=tenant, uri_template="pair://{a}/{b}", config={"text": "{a}|{b}"})

    contents = async_to_sync(TenantCatalog(tenant).read_resource)("pair://%7Bb%7D/x", None)

    assert contents is not None
    assert contents[0]["text"] == "{b}|x"


def test_concrete_resource_wins_over_a_matching_template(tenant: Tenant) -> None:
    ResourceFactory(tenant=tenant, uri="docs://intro", text="concrete")
    ResourceTemplateFactory(tenant=tenant, uri_template="docs://{page}", config={"text": "templated {page}"})

    catalog = TenantCatalog(tenant)

    assert async_to_sync(catalog.read_resource)("docs://intro", None)[0]["text"] == "concrete"
    assert async_to_sync(catalog.read_resource)("docs://other", None)[0]["text"] == "templated other"


def test_first_matching_template_by_name_wins(tenant: Tenant) -> None:
    ResourceTemplateFactory(tenant=tenant, name="b-general", uri_template="docs://{page}", config={"text": "general"})
    ResourceTemplateFactory(tenant=tenant, name="a-specific", uri_template="docs://{page}", config={"text": "specific"})

    assert async_to_sync(TenantCatalog(tenant).read_resource)("docs://x", None)[0]["text"] == "specific"


def test_unmatched_uri_reads_as_none(tenant: Tenant) -> None:
    ResourceTemplateFactory(tenant=tenant, uri_template="docs://{page}")

    assert async_to_sync(TenantCatalog(tenant).read_resource)("other://x", None) is None


def test_template_and_prompt_wires(tenant: Tenant) -> None:
    ResourceTemplateFactory(tenant=tenant, name="t", uri_template="docs://{p}", title="", description="Docs")
    PromptFactory(
        tenant=tenant,
        name="bare",
        description="",
        arguments=[],
        messages=[{"role": "user", "content": {"type": "text", "text": "x"}}],
    )
    catalog = TenantCatalog(tenant)

    templates = async_to_sync(catalog.list_resource_templates)(after=None, limit=10)
    prompts = async_to_sync(catalog.list_prompts)(after=None, limit=10)

    assert templates.items == [
        {"uriTemplate": "docs://{p}", "name": "t", "description": "Docs", "mimeType": "text/plain"}
    ]
    assert prompts.items == [{"name": "bare"}]


def test_get_prompt_carries_the_stored_messages_and_renders_arguments(tenant: Tenant) -> None:
    PromptFactory(
        tenant=tenant,
        name="greet",
        title="Greet",
        arguments=[{"name": "who", "required": True}, {"name": "mood"}],
        messages=[
            {"role": "user", "content": {"type": "text", "text": "Greet {{who}} in a {{mood}} way. {{unrelated}}"}},
            {
                "role": "assistant",
                "content": {"type": "resource", "resource": {"uri": "people://{{who}}", "text": "{{who}}"}},
            },
        ],
    )
    catalog = TenantCatalog(tenant)

    prompt = async_to_sync(catalog.get_prompt)("greet")

    assert isinstance(prompt, PromptDefinition)
    assert prompt.wire == {
        "name": "greet",
        "title": "Greet",
        "description": "A prompt.",
        "arguments": [{"name": "who", "required": True}, {"name": "mood"}],
    }
    rendered = async_to_sync(catalog.render_prompt)(prompt, {"who": "{{mood}} Ada"}, None)
    assert rendered["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Greet {{mood}} Ada in a  way. {{unrelated}}"}},
        {
            "role": "assistant",
            "content": {"type": "resource", "resource": {"uri": "people://{{mood}} Ada", "text": "{{mood}} Ada"}},
        },
    ]
    assert prompt.messages[0]["content"]["text"] == "Greet {{who}} in a {{mood}} way. {{unrelated}}"


def test_completion_filters_stored_values_by_case_insensitive_prefix(tenant: Tenant) -> None:
    PromptFactory(tenant=tenant, name="review", completions={"topic": ["Python", "pytest", "Rust", "PHP"]})
    ResourceTemplateFactory(
        tenant=tenant, uri_template="docs://{section}", completions={"section": ["intro", "Install"]}
    )
    catalog = TenantCatalog(tenant)

    def complete(ref: dict, name: str, value: str) -> list[str] | None:
        return async_to_sync(catalog.complete)(ref, {"name": name, "value": value}, {})

    assert complete({"type": "ref/prompt", "name": "review"}, "topic", "py") == ["Python", "pytest"]
    assert complete({"type": "ref/prompt", "name": "review"}, "topic", "") == ["Python", "pytest", "Rust", "PHP"]
    assert complete({"type": "ref/prompt", "name": "review"}, "tone", "") == []
    assert complete({"type": "ref/resource", "uri": "docs://{section}"}, "section", "IN") == ["intro", "Install"]
    assert complete({"type": "ref/resource", "uri": "docs://{other}"}, "section", "") is None
    assert complete({"type": "ref/prompt", "name": "missing"}, "topic", "") is None


def test_listing_through_the_catalog_is_one_query_and_one_for_the_upstreams_list_hints(
    tenant: Tenant, django_assert_num_queries: Any
) -> None:
    ToolFactory.create_batch(4, tenant=tenant)
    catalog = TenantCatalog(tenant)

    with django_assert_num_queries(2):
        page = async_to_sync(catalog.list_tools)(after=None, limit=3)

    assert len(page.items) == 3
