"""OpenAPI 3.0 and 3.1 documents to HTTP tool plans: names, arguments, bodies, schemas, hints, auth, base URLs,
and documents that are refused with the place of the problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tenants.openapi.document import OpenApiDocument, OpenApiError, document_parse
from tenants.openapi.schemas import SchemaTranslator
from tenants.openapi.translate import ImportOptions, Translation, document_translate, tool_name

FIXTURES = Path(__file__).parent / "fixtures"
JSONObject = dict[str, Any]


def load(name: str, location: str = "https://pets.example/docs/openapi") -> OpenApiDocument:
    return document_parse((FIXTURES / name).read_bytes(), location=location)


def by_name(translation: Translation) -> dict[str, JSONObject]:
    return {plan.name: plan.fields for plan in translation.tools}


@pytest.fixture
def v30() -> Translation:
    return document_translate(load("petstore-3.0.yaml"), ImportOptions(prefix="pets_", secret_name="pets-key"))


@pytest.fixture
def v31() -> Translation:
    options = ImportOptions(secret_name="shop", client_id="platform")
    return document_translate(load("petstore-3.1.json", "https://shop.example/spec/openapi.json"), options)


def test_each_operation_becomes_a_prefixed_tool_named_after_its_operation_id(v30: Translation) -> None:
    assert sorted(by_name(v30)) == [
        "pets_createPet",
        "pets_deletePet",
        "pets_get_pets_petId",
        "pets_listPets",
        "pets_replacePet",
    ]
    assert {plan.key for plan in v30.tools} >= {"GET /pets", "DELETE /pets/{petId}"}


def test_operations_http_tools_cannot_call_are_skipped_with_the_reason(v30: Translation) -> None:
    skipped = dict(v30.skipped)
    assert "multipart/form-data" in skipped["POST /pets/{petId}/photo"]
    assert "cookie parameter 'sid'" in skipped["GET /session"]


def test_names_without_an_operation_id_are_made_from_method_and_path_and_kept_to_the_rule() -> None:
    assert tool_name("", None, "get", "/pets/{petId}") == "get_pets_petId"
    assert tool_name("x_", "get tree/by id", "get", "/t") == "x_get_tree_by_id"
    assert len(tool_name("p_", "a" * 300, "get", "/")) == 128


def test_duplicate_names_are_numbered(v31: Translation) -> None:
    assert sorted(by_name(v31)) == ["get_tree_by_id", "placeOrder", "placeOrder_2"]


def test_parameters_become_arguments_and_the_url_a_template(v30: Translation) -> None:
    tool = by_name(v30)["pets_listPets"]
    assert tool["input_schema"]["properties"]["limit"] == {
        "type": ["integer", "null"],
        "exclusiveMaximum": 100,
        "description": "How many at most.",
    }
    assert tool["config"]["url"] == "https://eu.pets.example/v1/pets"
    assert tool["config"]["query"] == {"limit": "limit"}
    assert tool["config"]["headers"] == {"X-Trace": "X-Trace"}
    one = by_name(v30)["pets_get_pets_petId"]
    assert one["config"]["url"] == "https://eu.pets.example/v1/pets/{petId}"
    assert one["input_schema"]["required"] == ["petId"]
    assert one["input_schema"]["properties"]["petId"] == {"type": "integer", "minimum": 1}


def test_path_parameter_names_become_template_variables(v31: Translation) -> None:
    tool = by_name(v31)["get_tree_by_id"]
    assert tool["config"]["url"] == "https://shop.example/api/v3/trees/{tree_id}"
    assert tool["input_schema"]["required"] == ["tree_id"]


def test_a_json_body_is_flattened_into_the_arguments(v30: Translation) -> None:
    tool = by_name(v30)["pets_createPet"]
    schema = tool["input_schema"]
    assert sorted(schema["properties"]) == ["kind", "name", "tag"]
    assert schema["required"] == ["name"]
    assert schema["properties"]["kind"] == {"type": ["string", "null"], "enum": ["dog", "cat", None]}
    assert schema["properties"]["name"] == {"type": "string", "examples": ["Rex"]}
    assert tool["config"]["body"] == {"arguments": ["name", "tag", "kind"]}


def test_a_body_whose_property_collides_with_a_parameter_goes_under_one_argument(v30: Translation) -> None:
    tool = by_name(v30)["pets_replacePet"]
    assert sorted(tool["input_schema"]["properties"]) == ["body", "petId"]
    assert tool["config"]["body"] == {"argument": "body"}
    assert tool["input_schema"]["properties"]["body"]["properties"]["name"] == {"type": "string"}


def test_a_referenced_body_that_collides_with_a_path_parameter_goes_under_body(v31: Translation) -> None:
    tool = by_name(v31)["placeOrder"]  # Order has a "store" property; the path has {store}
    assert sorted(tool["input_schema"]["properties"]) == ["body", "store"]
    assert tool["input_schema"]["required"] == ["store", "body"]
    assert tool["input_schema"]["properties"]["body"] == {"$ref": "#/$defs/Order"}
    assert tool["input_schema"]["$defs"]["Order"]["properties"]["quantity"] == {
        "type": "integer",
        "exclusiveMinimum": 0,
    }
    assert tool["config"]["body"] == {"argument": "body"}


def test_recursive_schemas_are_kept_as_defs_and_refs(v30: Translation) -> None:
    output = by_name(v30)["pets_get_pets_petId"]["output_schema"]
    assert output["type"] == "object"
    assert output["properties"]["parent"] == {"$ref": "#/$defs/Pet"}
    assert output["$defs"]["Pet"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Pet"}
    assert "discriminator" not in output
    Draft202012Validator(output).validate({"id": 1, "name": "a", "parent": {"id": 2, "name": "b", "children": []}})
    with pytest.raises(Exception, match="is not of type 'integer'"):
        Draft202012Validator(output).validate({"id": 1, "name": "a", "parent": {"id": "two", "name": "b"}})


def test_the_output_schema_comes_only_from_an_object_typed_2xx_json_response(
    v30: Translation, v31: Translation
) -> None:
    tools = by_name(v30)
    assert tools["pets_listPets"]["output_schema"]["properties"]["next"] == {"type": ["string", "null"]}
    assert tools["pets_deletePet"]["output_schema"] is None
    assert by_name(v31)["placeOrder"]["output_schema"] is None  # an array
    assert by_name(v31)["get_tree_by_id"]["output_schema"]["properties"]["label"] == {"type": ["string", "null"]}


def test_every_schema_made_is_valid_json_schema_2020_12(v30: Translation, v31: Translation) -> None:
    for plan in [*v30.tools, *v31.tools]:
        Draft202012Validator.check_schema(plan.fields["input_schema"])
        if plan.fields["output_schema"] is not None:
            Draft202012Validator.check_schema(plan.fields["output_schema"])


def test_description_title_and_hints(v30: Translation) -> None:
    tools = by_name(v30)
    assert tools["pets_listPets"]["description"] == "List pets\n\nNewest first."
    assert tools["pets_listPets"]["title"] == "List pets"
    assert tools["pets_listPets"]["annotations"] == {"readOnlyHint": True}
    assert tools["pets_deletePet"]["annotations"] == {"destructiveHint": True}
    assert tools["pets_createPet"]["annotations"] is None
    assert tools["pets_deletePet"]["description"] == "DELETE /pets/{petId}"


def test_security_schemes_map_to_the_secret(v30: Translation, v31: Translation) -> None:
    tools = by_name(v30)
    assert tools["pets_listPets"]["config"]["auth"] == {"secret": "pets-key", "type": "header", "name": "X-API-Key"}
    assert tools["pets_deletePet"]["config"]["auth"] is None  # security: [] on the operation
    tree = by_name(v31)["get_tree_by_id"]["config"]["auth"]
    assert tree == {
        "secret": "shop",
        "type": "client_credentials",
        "client_id": "platform",
        "token_url": "https://shop.example/oauth/token",
        "scope": "pets:read",
    }
    assert by_name(v31)["placeOrder"]["config"]["auth"] == {"secret": "shop", "type": "bearer"}


def test_without_a_secret_no_auth_is_configured() -> None:
    translation = document_translate(load("petstore-3.0.yaml"), ImportOptions())
    assert {plan.fields["config"]["auth"] for plan in translation.tools} == {None}


def test_the_base_url_option_overrides_the_servers() -> None:
    options = ImportOptions(base_url="http://127.0.0.1:9000/")
    translation = document_translate(load("petstore-3.0.yaml"), options)
    assert by_name(translation)["listPets"]["config"]["url"] == "http://127.0.0.1:9000/pets"


def test_a_relative_server_from_a_file_needs_a_base_url() -> None:
    translation = document_translate(load("petstore-3.1.json", "/tmp/petstore.json"), ImportOptions())
    assert translation.tools == []
    assert all("give a base URL" in reason for _, reason in translation.skipped)


DOCUMENT_ERRORS = [
    (b"openapi: 3.0.0\ninfo: [unclosed\n", "not valid YAML at line 3"),
    (b'{"openapi": "3.1.0",\n "info": }', "not valid JSON at line 2, column 10"),
    (b'{"swagger": "2.0"}', "Swagger 2.0 documents are not supported"),
    (b'{"openapi": "4.0.0"}', "OpenAPI 4.0.0 is not supported"),
    (
        b'openapi: 3.0.3\ninfo: {title: t, version: "1"}\npaths:\n  /a:\n    get:\n      responses:\n'
        b"        '200': {description: 3}\n",
        "at paths./a.get.responses.200",
    ),
]


@pytest.mark.parametrize(("content", "message"), DOCUMENT_ERRORS)
def test_invalid_documents_are_refused_saying_where(content: bytes, message: str) -> None:
    with pytest.raises(OpenApiError, match=message.replace(".", r"\.")):
        document_parse(content, location="doc")


def test_yaml_aliases_that_explode_or_loop_are_refused() -> None:
    laughs = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    laughs += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]" for i in range(7)]
    bomb = ("openapi: 3.1.0\n" + "\n".join(laughs) + "\n").encode()
    with pytest.raises(OpenApiError, match="aliases expand it to"):
        document_parse(bomb, location="doc")
    with pytest.raises(OpenApiError, match="refers to itself through an alias"):
        document_parse(b"openapi: 3.1.0\nloop: &l [*l]\n", location="doc")
    with pytest.raises(OpenApiError, match="nested too deeply"):
        document_parse(b"[" * 100_000 + b"]" * 100_000, location="doc")


def test_structure_errors_name_the_line_in_yaml() -> None:
    content = b'openapi: 3.0.3\ninfo: {title: t, version: "1"}\npaths:\n  /a:\n    get:\n      responses:\n'
    content += b"        '200': {description: 3}\n"
    with pytest.raises(OpenApiError, match=r"\(line 7\)"):
        document_parse(content, location="doc")


def test_size_and_operation_caps() -> None:
    raw = (FIXTURES / "petstore-3.0.yaml").read_bytes()
    with pytest.raises(OpenApiError, match="the limit is 100"):
        document_parse(raw, location="doc", max_bytes=100)
    with pytest.raises(OpenApiError, match="7 operations; the limit is 3"):
        document_translate(document_parse(raw, location="https://x.example/"), ImportOptions(), max_operations=3)


def test_a_reference_to_nothing_skips_only_that_operation() -> None:
    OK = {"200": {"description": "ok"}}
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://api.example"}],
        "paths": {
            "/a": {"get": {"parameters": [{"$ref": "#/components/parameters/Missing"}], "responses": OK}},
            "/b": {"get": {"responses": OK}},
            "/c": {"$ref": "#/paths/~1nowhere"},
        },
    }
    translation = document_translate(document_parse(json.dumps(document).encode(), location="d"), ImportOptions())
    assert [plan.key for plan in translation.tools] == ["GET /b"]
    assert "points at nothing" in dict(translation.skipped)["GET /a"]
    assert "points at nothing" in dict(translation.skipped)["* /c"]


def test_references_outside_the_document_are_never_fetched_and_skip_their_operation() -> None:
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://api.example"}],
        "paths": {
            "/a": {"get": {"responses": {"200": {"$ref": "http://169.254.169.254/latest/r.yaml"}}}},
            "/b": {"get": {"responses": {"200": {"description": "ok"}}}},
        },
        "components": {"examples": {"e": {"value": {"$ref": "data that only looks like a reference"}}}},
    }
    translation = document_translate(document_parse(json.dumps(document).encode(), location="d"), ImportOptions())
    assert [plan.key for plan in translation.tools] == ["GET /b"]
    assert "only references inside the document are supported" in dict(translation.skipped)["GET /a"]


def test_openapi_30_nullable_without_a_type_allows_null_or_the_rest() -> None:
    document = {"components": {"schemas": {"Owner": {"type": "object"}}}}
    translator = SchemaTranslator(document, openapi_30=True)
    schema, used = translator.tool_schema(
        {"nullable": True, "allOf": [{"$ref": "#/components/schemas/Owner"}]}, where="x"
    )
    assert schema == {"anyOf": [{"allOf": [{"$ref": "#/$defs/Owner"}]}, {"type": "null"}]}
    assert used == {"Owner"}
    validator = Draft202012Validator({**schema, "$defs": translator.defs(used, where="x")})
    assert validator.is_valid(None) and validator.is_valid({}) and not validator.is_valid(3)


def test_a_server_url_whose_brackets_hold_no_address_skips_its_operations_saying_why() -> None:
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://[x]/v1"}],
        "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}},
    }
    parsed = document_parse(json.dumps(document).encode(), location="https://docs.example/openapi.json")

    translation = document_translate(parsed, ImportOptions())

    assert translation.tools == []
    assert dict(translation.skipped)["GET /a"] == "the server URL 'https://[x]/v1' does not parse"


def test_a_token_url_whose_brackets_hold_no_address_is_kept_as_written_for_the_tool_checks_to_refuse() -> None:
    flows = {"clientCredentials": {"tokenUrl": "https://[x]/token", "scopes": {}}}
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://api.example"}],
        "components": {"securitySchemes": {"cc": {"type": "oauth2", "flows": flows}}},
        "security": [{"cc": []}],
        "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}},
    }
    parsed = document_parse(json.dumps(document).encode(), location="https://docs.example/openapi.json")

    translation = document_translate(parsed, ImportOptions(secret_name="api", client_id="me"))

    assert translation.tools[0].fields["config"]["auth"]["token_url"] == "https://[x]/token"
