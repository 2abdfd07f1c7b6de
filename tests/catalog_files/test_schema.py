"""The shipped JSON Schema: a valid schema, served where exported files point editors, in step with the models'
choices and name rules, and its errors worded for people on the line they are about (unknown keys, wrong types,
missing keys, values outside a choice)."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from jsonschema import Draft202012Validator

from mcp_platform.catalog_files.loading import ConfigFileError, config_load
from mcp_platform.catalog_files.planning import file_check
from mcp_platform.catalog_files.schema import SCHEMA_FILE, config_schema, schema_problems
from mcp_platform.catalog_files.sections import PERIOD_NAMES, SECTIONS, SETTINGS_FIELDS
from mcp_platform.catalog_files.selections import SELECTION_LISTS
from mcp_platform.quotas.models import Period, RateLimit
from tenants.models import (
    MAX_TAGS,
    NAME_PATTERN,
    SECRET_NAME_PATTERN,
    TAG_PATTERN,
    UPSTREAM_NAME_PATTERN,
    Backend,
    ChangePolicy,
    TaskSupport,
    Upstream,
)


def problems_of(text: str) -> list[str]:
    return [str(problem) for problem in schema_problems(config_load(text))]


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(config_schema())


def test_the_schema_is_served_where_exported_files_point(client: Client) -> None:
    response = client.get("/static/schemas/tenant-config-v1.schema.json")

    assert response.status_code == 200
    assert json.loads(b"".join(response.streaming_content)) == json.loads(SCHEMA_FILE.read_text())


def test_the_schema_keeps_the_models_choices_and_name_rules() -> None:
    defs = config_schema()["$defs"]
    own_backends = sorted(set(Backend.values) - {Backend.UPSTREAM})  # upstream items are their upstream's
    assert sorted(defs["tool"]["properties"]["backend"]["enum"]) == own_backends
    assert defs["tool"]["properties"]["task_support"]["enum"] == TaskSupport.values
    assert defs["upstream"]["properties"]["session_mode"]["enum"] == Upstream.SessionMode.values
    assert defs["rate_limit"]["properties"]["scope"]["enum"] == RateLimit.Scope.values
    assert defs["rate_limit"]["properties"]["period"]["enum"] == [PERIOD_NAMES[p] for p in Period.values]
    assert defs["tool"]["properties"]["name"]["pattern"] == NAME_PATTERN
    assert defs["prompt"]["properties"]["name"]["pattern"] == NAME_PATTERN
    assert defs["upstream"]["properties"]["name"]["pattern"] == UPSTREAM_NAME_PATTERN
    assert defs["openapi_source"]["properties"]["secret_name"]["pattern"] == "^$|" + SECRET_NAME_PATTERN
    assert list(defs["settings"]["properties"]) == list(SETTINGS_FIELDS)
    for source in ("upstream", "openapi_source"):
        assert defs[source]["properties"]["change_policy"]["enum"] == ChangePolicy.values
    for item in ("tool", "resource", "resource_template", "prompt"):
        assert defs[item]["properties"]["tags"]["items"]["pattern"] == TAG_PATTERN
        assert defs[item]["properties"]["tags"]["maxItems"] == MAX_TAGS
    assert list(defs["selection"]["properties"]) == list(SELECTION_LISTS)


def test_every_section_has_its_list_in_the_schema_with_the_fields_it_reads() -> None:
    schema = config_schema()
    for section in SECTIONS:
        items = schema["properties"][section.name]["items"]["$ref"].removeprefix("#/$defs/")
        assert list(schema["$defs"][items]["properties"]) == list(section.fields), section.name


def test_unknown_keys_are_named_on_their_line_with_the_keys_allowed_there() -> None:
    problems = problems_of("version: 1\ntools:\n  - name: a\n    descripton: typo\nserver: []\n")

    assert problems == [
        "line 4 (tools[0].descripton): unknown key 'descripton': the keys here are name, title, description, backend, "
        "config, input_schema, output_schema, annotations, icons, task_support, enabled, required_scopes, tags",
        "line 5 (server): unknown key 'server': the keys here are version, tenant, settings, tools, resources, "
        "resource_templates, prompts, upstreams, openapi_sources, servers, rate_limits",
    ]


def test_wrong_types_missing_keys_and_choices_are_placed_on_their_lines() -> None:
    text = (
        "version: 1\n"
        "settings:\n"
        "  requires_authorization: 'yes'\n"
        "tools:\n"
        "  - description: no name\n"
        "  - name: b\n"
        "    enabled: 1\n"
        "    input_schema: [1]\n"
        "rate_limits:\n"
        "  - scope: tool\n"
        "    rate: 10\n"
        "    period: fortnight\n"
        "    burst: 0\n"
    )

    assert problems_of(text) == [
        "line 3 (settings.requires_authorization): must be true or false, not text",
        "line 5 (tools[0]): 'name' is missing",
        "line 7 (tools[1].enabled): must be true or false, not a whole number",
        "line 8 (tools[1].input_schema): must be an object, not a list",
        'line 12 (rate_limits[0].period): "fortnight" is not one of "second", "minute", "hour", "day"',
        "line 13 (rate_limits[0].burst): 0 is less than the minimum of 1",
    ]


def test_the_version_is_required_and_must_be_1() -> None:
    assert problems_of("tools: []\n") == ["line 1: 'version' is missing"]
    assert problems_of("version: 2\n") == ["line 1 (version): must be 1"]
    assert problems_of("- version: 1\n") == ["line 1: the file must be a mapping (version: 1, tools: ...), not a list"]


def test_file_check_raises_every_problem_sorted_by_line() -> None:
    with pytest.raises(ConfigFileError) as refused:
        file_check("version: 1\nprompts:\n  - name: 'has space'\ntools: {}\n")

    assert [problem.line for problem in refused.value.problems] == [3, 4]
