"""The JSON Schema of the file format, shipped as a static file (editors fetch it from the platform, the export names
it), and the check of a loaded file against it: each error worded for people and placed on its line."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaViolation

from mcp_platform.catalog_files.loading import LoadedFile, Problem, problems_sorted

# Where the schema is served (under STATIC_URL) and where it is in the source tree.
SCHEMA_STATIC_PATH = "schemas/tenant-config-v1.schema.json"
SCHEMA_FILE = Path(__file__).parent / "static" / SCHEMA_STATIC_PATH
JSON_TYPES = {
    dict: "an object",
    list: "a list",
    str: "text",
    bool: "true or false",
    int: "a whole number",
    float: "a number",
    type(None): "null",
}
TYPE_WORDS = {
    "object": "an object",
    "array": "a list",
    "string": "text",
    "boolean": "true or false",
    "integer": "a whole number",
    "number": "a number",
    "null": "null",
}


@cache
def config_schema() -> dict[str, Any]:
    """The schema of version 1 of the format."""
    schema: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return schema


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(config_schema())


def _found(value: Any) -> str:
    return JSON_TYPES.get(type(value), type(value).__name__)


def _wanted(types: Any) -> str:
    listed = types if isinstance(types, list) else [types]
    return " or ".join(TYPE_WORDS.get(str(t), str(t)) for t in listed)


def _problem(error: SchemaViolation, loaded: LoadedFile) -> Problem:
    path = tuple(error.absolute_path)
    kind = error.validator
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = error.schema.get("properties", {})
        unknown = sorted(key for key in error.instance if key not in allowed)
        first = (*path, unknown[0]) if unknown else path
        names = ", ".join(repr(key) for key in unknown)
        known = ", ".join(allowed)
        return loaded.problem(first, f"unknown key {names}: the keys here are {known}")
    if kind == "required":
        return loaded.problem(path, str(error.message).replace("is a required property", "is missing"))
    if kind == "type":
        return loaded.problem(path, f"must be {_wanted(error.validator_value)}, not {_found(error.instance)}")
    if kind == "enum":
        choices = ", ".join(json.dumps(choice) for choice in error.validator_value)
        return loaded.problem(path, f"{json.dumps(error.instance)[:80]} is not one of {choices}")
    if kind == "const":
        return loaded.problem(path, f"must be {json.dumps(error.validator_value)}")
    if kind == "pattern":
        return loaded.problem(path, f"{error.instance!r:.80} does not match {error.validator_value}")
    return loaded.problem(path, str(error.message).splitlines()[0][:300])


def schema_problems(loaded: LoadedFile) -> list[Problem]:
    """Where and why ``loaded`` breaks the format's schema (nothing when it keeps it), in the file's order."""
    if not isinstance(loaded.data, dict):
        return [loaded.problem((), f"the file must be a mapping (version: 1, tools: ...), not {_found(loaded.data)}")]
    return problems_sorted(_problem(error, loaded) for error in _validator().iter_errors(loaded.data))
