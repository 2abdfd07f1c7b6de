"""The built-in catalog commands create every fixture through the services and are idempotent."""

from __future__ import annotations

import io
import json

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from tenants.catalog import TenantCatalog
from tenants.models import Prompt, Resource, ResourceTemplate, Tenant, Tool

pytestmark = pytest.mark.django_db

CONFORMANCE_TOOLS = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_reconnection",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_missing_capability",
    "test_logging_tool",
    "test_streaming_elicitation",
    "test_x_mcp_header",
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    "json_schema_2020_12_tool",
    # The tasks-* scenarios.
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
}
CONFORMANCE_TASK_SUPPORT = {
    "greet": "forbidden",
    "slow_compute": "optional",
    "failing_job": "required",
    "protocol_error_job": "optional",
    "confirm_delete": "optional",
    "multi_input": "optional",
    "test_tool_with_task": "required",
}
CONFORMANCE_PROMPTS = {
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
    "test_input_required_result_prompt",
}


def run(command: str, *args: str) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def counts(slug: str) -> tuple[int, int, int, int]:
    tenant = Tenant.objects.get(slug=slug)
    return (
        Tool.objects.filter(tenant=tenant).count(),
        Resource.objects.filter(tenant=tenant).count(),
        ResourceTemplate.objects.filter(tenant=tenant).count(),
        Prompt.objects.filter(tenant=tenant).count(),
    )


@pytest.mark.parametrize(
    ("command", "slug"), [("load_conformance_tenant", "conformance"), ("load_demo_tenant", "demo")]
)
def test_loading_twice_changes_nothing_the_second_time(command: str, slug: str) -> None:
    first = run(command)
    before = counts(slug)
    second = run(command)

    assert "0 updated" in first
    assert " 0 created, 0 updated," in second
    assert counts(slug) == before
    assert Tenant.objects.filter(slug=slug).count() == 1


@pytest.mark.parametrize("command", ["load_demo_tenant", "load_conformance_tenant"])
def test_a_first_load_prints_one_summary_line(command: str) -> None:
    output = run(command)

    assert len(output.splitlines()) == 1
    assert " created, 0 updated, 0 unchanged." in output


def test_every_entry_is_named_at_verbosity_two() -> None:
    output = run("load_demo_tenant", "--verbosity", "2")

    assert "tool echo: created" in output.splitlines()


def test_conformance_tenant_holds_every_fixture() -> None:
    run("load_conformance_tenant")
    tenant = Tenant.objects.get(slug="conformance")

    assert set(Tool.objects.filter(tenant=tenant).values_list("name", flat=True)) == CONFORMANCE_TOOLS
    support = dict(Tool.objects.filter(tenant=tenant).values_list("name", "task_support"))
    assert {name: support[name] for name in CONFORMANCE_TASK_SUPPORT} == CONFORMANCE_TASK_SUPPORT
    assert support["test_simple_text"] == "forbidden"
    assert set(Prompt.objects.filter(tenant=tenant).values_list("name", flat=True)) == CONFORMANCE_PROMPTS
    assert set(Resource.objects.filter(tenant=tenant).values_list("uri", flat=True)) == {
        "test://static-text",
        "test://static-binary",
        "test://watched-resource",
    }
    assert list(ResourceTemplate.objects.filter(tenant=tenant).values_list("uri_template", flat=True)) == [
        "test://template/{id}/data"
    ]
    assert tenant.instructions
    assert tenant.status == Tenant.Status.ACTIVE
    assert tenant.requires_authorization is False


def test_reloading_restores_an_edited_fixture() -> None:
    run("load_conformance_tenant")
    Tool.objects.filter(name="test_simple_text").update(description="edited")

    output = run("load_conformance_tenant")

    assert "tool test_simple_text: updated" in output
    assert Tool.objects.get(name="test_simple_text").description == "Tests simple text content response"


def test_reloading_resets_fields_the_fixture_leaves_out() -> None:
    run("load_conformance_tenant")
    Tool.objects.filter(name="test_simple_text").update(required_scopes="billing:write")
    Tenant.objects.filter(slug="conformance").update(cache_ttl_ms=5, cache_scope="public")

    run("load_conformance_tenant")

    assert Tool.objects.get(name="test_simple_text").required_scopes == ""
    tenant = Tenant.objects.get(slug="conformance")
    assert (tenant.cache_ttl_ms, tenant.cache_scope) == (None, "")


def test_conformance_wire_matches_the_reference_server() -> None:
    run("load_conformance_tenant")
    catalog = TenantCatalog(Tenant.objects.get(slug="conformance"))

    tools = {t["name"]: t for t in async_to_sync(catalog.list_tools)(after=None, limit=100).items}
    assert tools["json_schema_2020_12_tool"] == {
        "name": "json_schema_2020_12_tool",
        "description": "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": False,
        },
    }
    assert tools["test_sampling"]["inputSchema"] == {
        "type": "object",
        "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
        "required": ["prompt"],
    }
    assert tools["test_simple_text"]["inputSchema"] == {"type": "object", "properties": {}}

    resources = async_to_sync(catalog.list_resources)(after=None, limit=100).items
    assert resources[0] == {
        "uri": "test://static-binary",
        "name": "static-binary",
        "title": "Static Binary Resource",
        "description": "A static binary resource (image) for testing",
        "mimeType": "image/png",
    }
    assert async_to_sync(catalog.read_resource)("test://static-text", None) == [
        {
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }
    ]

    prompts = {p["name"]: p for p in async_to_sync(catalog.list_prompts)(after=None, limit=100).items}
    assert prompts["test_prompt_with_arguments"]["arguments"] == [
        {"name": "arg1", "description": "First test argument", "required": True},
        {"name": "arg2", "description": "Second test argument", "required": True},
    ]


def test_conformance_prompts_render_like_the_reference() -> None:
    run("load_conformance_tenant")
    catalog = TenantCatalog(Tenant.objects.get(slug="conformance"))

    with_args = async_to_sync(catalog.get_prompt)("test_prompt_with_arguments")
    embedded = async_to_sync(catalog.get_prompt)("test_prompt_with_embedded_resource")

    render = async_to_sync(catalog.render_prompt)
    assert render(with_args, {"arg1": "testValue1", "arg2": "testValue2"}, None)["messages"] == [
        {
            "role": "user",
            "content": {"type": "text", "text": "Prompt with arguments: arg1='testValue1', arg2='testValue2'"},
        }
    ]
    first = render(embedded, {"resourceUri": "test://example-resource"}, None)["messages"][0]
    assert first["content"]["resource"] == {
        "uri": "test://example-resource",
        "mimeType": "text/plain",
        "text": "Embedded resource content for testing.",
    }


def test_conformance_template_reads_like_the_reference() -> None:
    run("load_conformance_tenant")
    catalog = TenantCatalog(Tenant.objects.get(slug="conformance"))

    contents = async_to_sync(catalog.read_resource)("test://template/123/data", None)

    assert contents == [
        {
            "uri": "test://template/123/data",
            "mimeType": "application/json",
            "text": '{"id":"123","templateTest":true,"data":"Data for ID: 123"}',
        }
    ]
    assert json.loads(contents[0]["text"])["id"] == "123"


def test_demo_tenant_offers_its_sample_catalog() -> None:
    run("load_demo_tenant")
    catalog = TenantCatalog(Tenant.objects.get(slug="demo"))

    names = [t["name"] for t in async_to_sync(catalog.list_tools)(after=None, limit=100).items]
    greeting = async_to_sync(catalog.read_resource)("demo://greeting/Ada", None)
    languages = async_to_sync(catalog.complete)(
        {"type": "ref/prompt", "name": "code_review"}, {"name": "language", "value": "ja"}, {}
    )

    assert names == sorted(
        ["echo", "add", "count_slowly", "ask_user_name", "summarize", "list_client_roots", "platform_info"]
    )
    assert greeting == [
        {
            "uri": "demo://greeting/Ada",
            "mimeType": "text/plain",
            "text": "Hello, Ada! This greeting came from a resource template.",
        }
    ]
    assert languages == ["java", "javascript"]


def test_loading_if_missing_keeps_admin_edits_and_reloading_restores() -> None:
    run("load_demo_tenant", "--if-missing")
    Tool.objects.filter(tenant__slug="demo", name="echo").update(description="Edited in the admin")

    said = run("load_demo_tenant", "--if-missing")
    kept = Tool.objects.get(tenant__slug="demo", name="echo").description
    run("load_demo_tenant")

    assert "left as it is" in said
    assert kept == "Edited in the admin"
    assert Tool.objects.get(tenant__slug="demo", name="echo").description != "Edited in the admin"
