"""Tool argument and output checks: jsonschema-rs decides, the Python ``jsonschema`` library explains."""

from __future__ import annotations

import datetime
import socket
import threading
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_core.catalog import ToolDefinition
from mcp_core.features.tools import validation_errors

ECHO_SCHEMA = {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
RICH_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 5},
        "count": {"type": "integer", "minimum": 0, "maximum": 10},
        "ratio": {"type": "number", "exclusiveMaximum": 1},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "uniqueItems": True},
        "mode": {"enum": ["fast", "slow"]},
        "nested": {"type": "object", "properties": {"on": {"type": "boolean"}}, "additionalProperties": False},
    },
    "required": ["name"],
    "additionalProperties": False,
    "$defs": {"tag": {"type": "string", "pattern": "^[a-z]+$"}},
}

# No newline: it is where the two readings of "^[a-z]+$" part (see the ECMA-262 test below).
texts = st.text(alphabet=st.characters(blacklist_characters="\n"), max_size=6)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-20, 20) | st.floats(-2, 2, allow_nan=False) | texts,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=8,
)
candidate_arguments = st.fixed_dictionaries(
    {},
    optional={
        "name": json_values | st.text(alphabet="ab", max_size=7),
        "count": json_values,
        "ratio": json_values,
        "tags": json_values | st.lists(st.sampled_from(["a", "b", "ab", "A", "a1"]), max_size=3),
        "mode": json_values | st.sampled_from(["fast", "slow", "FAST"]),
        "nested": json_values | st.fixed_dictionaries({}, optional={"on": json_values}),
        "extra": json_values,
    },
)


def errors(schema: dict[str, Any], instance: Any, which: str = "input") -> list[str]:
    return validation_errors(ToolDefinition(wire={"name": "t", "inputSchema": schema}), which, schema, instance)


def test_valid_arguments_have_no_errors() -> None:
    assert errors(ECHO_SCHEMA, {"message": "hello"}) == []


def test_invalid_arguments_are_explained_in_the_python_librarys_words() -> None:
    assert errors(ECHO_SCHEMA, {}) == ["(root): 'message' is a required property"]
    assert errors(ECHO_SCHEMA, {"message": 5}) == ["message: 5 is not of type 'string'"]


def test_several_errors_come_in_path_order() -> None:
    found = errors(RICH_SCHEMA, {"name": "", "count": -1, "tags": ["ok", "NO"]})
    assert found == [
        "count: -1 is less than the minimum of 0",
        "name: '' should be non-empty",
        "tags/1: 'NO' does not match '^[a-z]+$'",
    ]


@settings(max_examples=400, deadline=None)
@given(candidate_arguments)
def test_the_fast_check_agrees_with_the_python_library(arguments: dict[str, Any]) -> None:
    from jsonschema import Draft202012Validator

    expected_valid = Draft202012Validator(RICH_SCHEMA).is_valid(arguments)
    assert (errors(RICH_SCHEMA, arguments) == []) is expected_valid


def test_a_pattern_is_an_ecma_262_regular_expression() -> None:
    # Python's ``$`` also matches before a final newline, and its ``\d`` takes any Unicode digit: JSON Schema asks
    # for ECMA-262, where neither does. A value only the Python reading accepts is refused, in jsonschema-rs's
    # words since the Python library finds nothing to explain.
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}
    refused = errors(schema, {"id": "abc\n"})
    assert len(refused) == 1 and refused[0].startswith("id: ") and "does not match" in refused[0]
    assert errors({"type": "string", "pattern": "^\\d+$"}, "١٢") != []
    assert errors({"type": "string", "pattern": "^\\d+$"}, "12") == []


def test_a_remote_reference_is_never_fetched() -> None:
    # A listening socket nobody should connect to: jsonschema-rs compiles offline, the Python library has no
    # retriever, so the reference is an error of the tool's schema and no connection is ever made.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    connected = threading.Event()

    def watch() -> None:
        try:
            conn, _ = listener.accept()
            connected.set()
            conn.close()
        except OSError:
            pass

    watcher = threading.Thread(target=watch)
    watcher.start()
    schema = {"type": "object", "properties": {"x": {"$ref": f"http://127.0.0.1:{port}/schema.json"}}}
    try:
        found = errors(schema, {"x": 1})
    finally:
        watcher.join()
        listener.close()
    assert not connected.is_set()
    assert found == [
        f"the tool's schema is invalid: it refers to 'http://127.0.0.1:{port}/schema.json', which is not part of it "
        "(references are never fetched)"
    ]


def test_references_inside_the_schema_and_to_the_meta_schemas_resolve() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tag": {"$ref": "#/$defs/tag"},
            "schema": {"$ref": "https://json-schema.org/draft/2020-12/schema"},
        },
        "$defs": {"tag": {"type": "string"}},
    }
    assert errors(schema, {"tag": "a", "schema": {"type": "object"}}) == []
    assert errors(schema, {"tag": 1}) == ["tag: 1 is not of type 'string'"]
    assert errors(schema, {"schema": {"type": 5}}) != []


def test_output_that_is_not_json_data_is_judged_by_the_python_library() -> None:
    schema = {"type": "object", "properties": {"when": {"type": "string"}}}
    assert errors(schema, {"when": datetime.date(2026, 1, 2)}, which="output") == [
        "when: datetime.date(2026, 1, 2) is not of type 'string'"
    ]
    assert errors({"type": "object"}, {1: "a"}, which="output") == []


def test_an_invalid_schema_is_reported_as_the_tools() -> None:
    [problem] = errors({"type": "object", "properties": {"x": {"type": "strin"}}}, {"x": 1})
    assert problem.startswith("the tool's schema is invalid: 'strin' is not valid")


def test_arguments_as_deep_as_json_decoding_allows_get_an_error_not_a_recursion_error() -> None:
    # orjson decodes about a thousand levels; a recursive schema walks all of them to explain a rejection.
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/list"}}, "$defs": {"list": {"type": "array"}}}
    schema["$defs"]["list"]["items"] = {"$ref": "#/$defs/list"}
    deep = orjson.loads("[" * 1020 + "1" + "]" * 1020)

    assert errors(schema, {"x": deep}) == ["(root): the value is nested too deeply to check"]
    assert errors(schema, {"x": orjson.loads("[" * 1020 + "]" * 1020)}) == []


def test_a_schema_nested_too_deeply_to_check_is_reported_as_the_tools() -> None:
    schema = {"type": "object", "properties": {"x": orjson.loads('{"not": ' * 1000 + "{}" + "}" * 1000)}}

    assert errors(schema, {"x": 1}) == [
        "the tool's schema is invalid: it cannot be read as JSON (Recursion limit reached)"
    ]
