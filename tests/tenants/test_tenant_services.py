"""The services refuse what cannot be served, with messages keyed by field, and store the rest."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from tenants import services
from tenants.backends.python_grants import python_function_grant
from tenants.models import Backend, Membership, Tenant, Tool
from tests.factories import PromptFactory, ResourceFactory, TenantFactory, ToolFactory, UserFactory

pytestmark = pytest.mark.django_db

TEXT_RESULT = {"content": [{"type": "text", "text": "hi"}], "isError": False}


def errors_of(excinfo: pytest.ExceptionInfo[ValidationError]) -> dict[str, list[str]]:
    return excinfo.value.message_dict


def test_tool_create_stores_a_valid_tool(tenant: Tenant) -> None:
    tool = services.tool_create(tenant=tenant, name="weather.get-v2", description="Weather", config=TEXT_RESULT)

    stored = Tool.objects.get(pk=tool.pk)
    assert stored.name == "weather.get-v2"
    assert stored.input_schema == {"type": "object"}
    assert stored.enabled is True


@pytest.mark.parametrize("name", ["", "has space", "x" * 129, "naïve", "slash/name", "colon:name"])
def test_tool_name_outside_the_naming_rule_is_rejected(tenant: Tenant, name: str) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.tool_create(tenant=tenant, name=name, config=TEXT_RESULT)

    assert "name" in errors_of(excinfo)
    assert not Tool.objects.exists()


def test_tool_name_of_128_allowed_characters_is_accepted(tenant: Tenant) -> None:
    name = ("Ab9_.-" * 22)[:128]

    assert services.tool_create(tenant=tenant, name=name, config=TEXT_RESULT).name == name


def test_input_schema_must_be_an_object_schema(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.tool_create(tenant=tenant, name="t", input_schema={"type": "string"}, config=TEXT_RESULT)

    assert errors_of(excinfo)["input_schema"] == ['The input schema must have "type": "object" at its root.']


def test_input_schema_must_be_valid_json_schema(tenant: Tenant) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}

    with pytest.raises(ValidationError) as excinfo:
        services.tool_create(tenant=tenant, name="t", input_schema=schema, config=TEXT_RESULT)

    (message,) = errors_of(excinfo)["input_schema"]
    assert message.startswith("The input schema is not a valid JSON Schema (at properties/n/minimum)")


def test_output_schema_must_be_valid_json_schema(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.tool_create(tenant=tenant, name="t", output_schema={"type": 5}, config=TEXT_RESULT)

    assert "output_schema" in errors_of(excinfo)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"content": [{"type": "text"}]}, "content[0]: text content needs a string 'text'."),
        ({"content": [{"type": "video", "data": "x"}]}, "content[0]: unknown content type 'video'."),
        ({"content": "hello"}, 'A static tool\'s config needs "content": a list of content items.'),
        ({"content": [], "isError": "no"}, '"isError" must be true or false.'),
        ({"content": [], "extra": 1}, "Unknown key 'extra' in a static tool's config."),
    ],
)
def test_static_tool_with_bad_content_is_rejected(tenant: Tenant, config: dict, expected: str) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.tool_create(tenant=tenant, name="t", config=config)

    assert expected in errors_of(excinfo)["config"]


def test_static_tool_with_output_schema_needs_conforming_structured_content(tenant: Tenant) -> None:
    output_schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    config = {**TEXT_RESULT, "structuredContent": {"n": "three"}}

    with pytest.raises(ValidationError) as excinfo:
        services.tool_create(tenant=tenant, name="t", output_schema=output_schema, config=config)

    assert errors_of(excinfo)["config"] == [
        "structuredContent does not match the output schema: 'three' is not of type 'integer'"
    ]


def test_python_tool_must_name_a_registered_function(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.tool_create(tenant=tenant, name="t", backend=Backend.PYTHON, config={"function": "nope.missing"})

    (message,) = errors_of(excinfo)["config"]
    assert message.startswith("No Python tool function named 'nope.missing' is registered")
    assert "demo.echo" in message


def test_python_tool_names_a_registered_function(tenant: Tenant) -> None:
    python_function_grant(tenant=tenant, function="demo.echo")
    tool = services.tool_create(tenant=tenant, name="echo", backend=Backend.PYTHON, config={"function": "demo.echo"})

    assert tool.pk is not None


def test_duplicate_tool_name_in_one_tenant_is_rejected(tenant: Tenant, other_tenant: Tenant) -> None:
    services.tool_create(tenant=tenant, name="dup", config=TEXT_RESULT)

    with pytest.raises(ValidationError) as excinfo:
        services.tool_create(tenant=tenant, name="dup", config=TEXT_RESULT)

    assert errors_of(excinfo)["__all__"] == ["Tool with this Tenant and Name already exists."]
    assert services.tool_create(tenant=other_tenant, name="dup", config=TEXT_RESULT).pk is not None


def test_tool_update_changes_only_what_it_is_given(tenant: Tenant) -> None:
    tool = ToolFactory(tenant=tenant, name="t", description="old")

    services.tool_update(tool=tool, data={"description": "new", "enabled": False})

    stored = Tool.objects.get(pk=tool.pk)
    assert (stored.description, stored.enabled, stored.name) == ("new", False, "t")


def test_failed_tool_update_leaves_the_instance_as_stored(tenant: Tenant) -> None:
    tool = ToolFactory(tenant=tenant, name="t", description="old")

    with pytest.raises(ValidationError):
        services.tool_update(tool=tool, data={"description": "new", "input_schema": {"type": "array"}})

    assert tool.description == "old"
    assert tool.input_schema == {"type": "object", "properties": {}}
    assert Tool.objects.get(pk=tool.pk).description == "old"


def test_tool_update_rejects_fields_it_does_not_own(tenant: Tenant) -> None:
    tool = ToolFactory(tenant=tenant)

    with pytest.raises(ValidationError) as excinfo:
        services.tool_update(tool=tool, data={"tenant": TenantFactory()})

    assert "tenant" in errors_of(excinfo)


def test_tool_upsert_says_whether_it_created_updated_or_left_alone(tenant: Tenant) -> None:
    _, first = services.tool_upsert(tenant=tenant, name="t", description="a", config=TEXT_RESULT)
    _, second = services.tool_upsert(tenant=tenant, name="t", description="a", config=TEXT_RESULT)
    tool, third = services.tool_upsert(tenant=tenant, name="t", description="b", config=TEXT_RESULT)

    assert (first, second, third) == ("created", "unchanged", "updated")
    assert tool.description == "b"
    assert Tool.objects.filter(tenant=tenant).count() == 1


def test_upsert_with_an_unknown_field_is_rejected(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.tool_upsert(tenant=tenant, name="t", colour="red")

    assert errors_of(excinfo) == {"colour": ["Unknown field."]}


def test_tool_delete_removes_the_tool(tenant: Tenant) -> None:
    tool = ToolFactory(tenant=tenant)

    services.tool_delete(tool=tool)

    assert not Tool.objects.filter(tenant=tenant).exists()


# ---- resources ---------------------------------------------------------------------------------------


def test_resource_needs_exactly_one_of_text_or_blob(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as neither:
        services.resource_create(tenant=tenant, uri="docs://a", name="a")
    with pytest.raises(ValidationError) as both:
        services.resource_create(tenant=tenant, uri="docs://a", name="a", text="x", blob="eA==")

    assert errors_of(neither)["__all__"] == ["A resource has exactly one of text or blob."]
    assert errors_of(both)["__all__"] == ["A resource has exactly one of text or blob."]


def test_resource_blob_must_be_base64(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.resource_create(tenant=tenant, uri="docs://a", name="a", blob="not base64!")

    assert errors_of(excinfo)["blob"] == ["The blob must be base64-encoded."]


def test_resource_uri_needs_a_scheme(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.resource_create(tenant=tenant, uri="just-a-name", name="a", text="x")

    assert "uri" in errors_of(excinfo)


def test_duplicate_resource_uri_in_one_tenant_is_rejected(tenant: Tenant) -> None:
    ResourceFactory(tenant=tenant, uri="docs://a")

    with pytest.raises(ValidationError) as excinfo:
        services.resource_create(tenant=tenant, uri="docs://a", name="again", text="x")

    assert "__all__" in errors_of(excinfo)


def test_resource_annotations_are_checked(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.resource_create(
            tenant=tenant, uri="docs://a", name="a", text="x", annotations={"audience": ["robot"], "priority": 2}
        )

    assert errors_of(excinfo)["annotations"] == [
        '"audience" must be a list of "user" and/or "assistant".',
        '"priority" must be a number from 0 to 1.',
    ]


def test_resource_can_switch_from_text_to_blob(tenant: Tenant) -> None:
    resource = ResourceFactory(tenant=tenant)

    services.resource_update(resource=resource, data={"text": None, "blob": "AAEC"})

    resource.refresh_from_db()
    assert (resource.text, resource.blob) == (None, "AAEC")


# ---- resource templates ------------------------------------------------------------------------------


def test_template_needs_a_valid_uri_template(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.resource_template_create(tenant=tenant, name="t", uri_template="docs://{unclosed", config={"text": ""})

    (message,) = errors_of(excinfo)["uri_template"]
    assert message.startswith("Not a valid URI template:")


def test_static_template_needs_text(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.resource_template_create(tenant=tenant, name="t", uri_template="docs://{x}", config={"body": "x"})

    assert "config" in errors_of(excinfo)


def test_template_completions_must_name_its_variables(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.resource_template_create(
            tenant=tenant,
            name="t",
            uri_template="docs://{section}",
            config={"text": "{section}"},
            completions={"page": ["1"]},
        )

    assert errors_of(excinfo)["completions"] == ["Completions name 'page', which is not a template variable here."]


def test_python_template_must_name_a_registered_function(tenant: Tenant) -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.resource_template_create(
            tenant=tenant, name="t", uri_template="docs://{x}", backend=Backend.PYTHON, config={"function": "demo.echo"}
        )

    # demo.echo is a tool function, not a resource-template one: the namespaces are separate.
    assert errors_of(excinfo)["config"][0].startswith("No Python resource template function named 'demo.echo'")


# ---- prompts -----------------------------------------------------------------------------------------


def _prompt(tenant: Tenant, **overrides: object) -> None:
    fields: dict = {
        "name": "p",
        "arguments": [{"name": "topic", "required": True}],
        "messages": [{"role": "user", "content": {"type": "text", "text": "About {{topic}}"}}],
        **overrides,
    }
    services.prompt_create(tenant=tenant, **fields)


@pytest.mark.parametrize(
    ("overrides", "field", "expected"),
    [
        ({"name": "bad name"}, "name", None),
        ({"messages": []}, "messages", "Messages must be a non-empty list of {role, content} objects."),
        (
            {"messages": [{"role": "system", "content": {"type": "text", "text": "x"}}]},
            "messages",
            'messages[0].role must be "user" or "assistant".',
        ),
        (
            {"messages": [{"role": "user", "content": {"type": "image", "data": "x"}}]},
            "messages",
            "messages[0].content: image content needs base64 'data' and 'mimeType'.",
        ),
        (
            {"messages": [{"role": "user", "content": {"type": "text", "text": "{{subject}}"}}]},
            "messages",
            "messages[0] uses {{subject}} but the prompt declares no argument 'subject'.",
        ),
        ({"arguments": [{"name": "topic"}, {"name": "topic"}]}, "arguments", "Argument 'topic' is declared twice."),
        (
            {"arguments": [{"name": "topic", "required": "yes"}]},
            "arguments",
            "arguments[0].required must be true or false.",
        ),
        (
            {"completions": {"tone": ["dry"]}},
            "completions",
            "Completions name 'tone', which is not an argument here.",
        ),
    ],
)
def test_malformed_prompt_is_rejected(tenant: Tenant, overrides: dict, field: str, expected: str | None) -> None:
    with pytest.raises(ValidationError) as excinfo:
        _prompt(tenant, **overrides)

    assert field in errors_of(excinfo)
    if expected is not None:
        assert expected in errors_of(excinfo)[field]


def test_duplicate_prompt_name_is_rejected(tenant: Tenant) -> None:
    PromptFactory(tenant=tenant, name="p")

    with pytest.raises(ValidationError):
        _prompt(tenant)


# ---- tenants and memberships -------------------------------------------------------------------------


def test_tenant_slug_must_be_a_slug() -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.tenant_create(slug="Not A Slug", name="x")

    assert "slug" in errors_of(excinfo)


def test_tenant_allowed_origins_must_be_origins() -> None:
    with pytest.raises(ValidationError) as excinfo:
        services.tenant_create(slug="a", name="A", allowed_origins=["https://ok.example", "https://x.example/path"])

    assert errors_of(excinfo)["allowed_origins"] == [
        "'https://x.example/path' is not an origin (scheme://host[:port])."
    ]


def test_tenant_update_suspends_a_tenant(tenant: Tenant) -> None:
    services.tenant_update(tenant=tenant, data={"status": Tenant.Status.SUSPENDED})

    assert Tenant.objects.get(pk=tenant.pk).status == "suspended"


def test_membership_add_then_change_role_then_remove(tenant: Tenant) -> None:
    user = UserFactory()

    services.membership_add(tenant=tenant, user=user)
    services.membership_add(tenant=tenant, user=user, role=Membership.Role.OWNER)

    assert list(Membership.objects.values_list("role", flat=True)) == ["owner"]
    assert services.membership_remove(tenant=tenant, user=user) is True
    assert services.membership_remove(tenant=tenant, user=user) is False


def test_an_input_schema_with_a_pattern_that_does_not_compile_is_refused(tenant: Tenant) -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "[unclosed"}}}

    with pytest.raises(ValidationError) as excinfo:
        services.tool_create(tenant=tenant, name="t", input_schema=schema, config=TEXT_RESULT)

    assert errors_of(excinfo)["input_schema"] == [
        "The input schema is not a valid JSON Schema (at properties/code/pattern): '[unclosed' is not a 'regex'"
    ]
