"""Every config a JSON author writes opens in the structured fields and saves back as the same config: HTTP,
static, Python; annotations and icons, templates' texts, prompts' arguments and messages too. Shapes the fields
cannot hold stay whole in the JSON boxes."""

from __future__ import annotations

from typing import Any

import pytest

from tenants.admin.backend_forms.http import http_config_join, http_config_split
from tenants.admin.backend_forms.static import (
    static_config_join,
    static_config_split,
    static_template_join,
    static_template_split,
)
from tenants.admin.prompt_details import ROWS, rows_join, rows_split
from tenants.admin.python_functions import PythonFunctionForm
from tenants.admin.tool_details import annotations_join, annotations_split, icons_join, icons_split
from tenants.builtin.bench_fixtures import BENCH
from tenants.builtin.conformance_fixtures import CONFORMANCE
from tenants.builtin.demo_fixtures import DEMO

JSONObject = dict[str, Any]

HTTP_CONFIGS: list[JSONObject] = [
    {"url": "https://api.example/pets/{id}"},
    {"method": "POST", "url": "https://api.example/pets", "body": {"argument": "pet"}},
    {"method": "PUT", "url": "https://api.example/pets/{id}", "body": {"arguments": ["name", "tag"]}},
    {"url": "https://api.example/search{?q}", "query": {"limit": "limit", "page": "page"}},
    {"url": "https://api.example/x", "headers": {"X-Trace": "trace"}, "static_headers": {"Accept": "text/csv"}},
    {"url": "https://api.example/x", "auth": {"type": "bearer", "secret": "api"}},
    {"url": "https://api.example/x", "auth": {"type": "query", "name": "key", "secret": "api"}},
    {"url": "https://api.example/x", "auth": {"type": "header", "name": "X-API-Key", "secret": "api"}},
    {"url": "https://api.example/x", "auth": {"type": "basic", "secret": "api"}},
    {
        "url": "https://api.example/x",
        "auth": {
            "type": "client_credentials",
            "secret": "oauth",
            "client_id": "me",
            "token_url": "https://auth.example/token",
            "scope": "read write",
        },
    },
    {"url": "https://api.example/x", "timeout": 30},
    {"url": "https://api.example/x", "timeout": 2.5},
    # The model's help text: every key, empty where unused.
    {"method": "GET", "url": "https://api.example/{id}", "query": {}, "headers": {}, "body": None, "auth": None},
]
# Shapes the fields cannot hold as written: kept whole in Advanced (JSON), so nothing is lost or changed.
HTTP_ODD_CONFIGS: list[JSONObject] = [
    {"url": "https://api.example/x", "query": {"a=b": "c"}},
    {"url": "https://api.example/x", "static_headers": {"X-Pad": " spaced "}},
    {"url": "https://api.example/x", "body": {"arguments": ["a,b"]}},
    {"url": "https://api.example/x", "auth": {"type": "magic", "secret": "s"}},
    {"url": "https://api.example/x", "auth": {"type": "header", "secret": "s", "extra": 1}},
    {"url": "https://api.example/x", "timeout": "soon"},
    {"url": "https://api.example/x", "unknown": True},
    {"method": "BREW", "url": "https://api.example/x"},
]


def normal_http(config: JSONObject) -> JSONObject:
    """What the fields save: the method spelled out, empty maps and null body or auth left out (the same request)."""
    result = {"method": "GET", **config}
    for key in ("query", "headers", "static_headers", "body", "auth"):
        if key in result and result[key] in (None, {}):
            result.pop(key)
    return result


def as_posted(values: JSONObject) -> JSONObject:
    """The section's values as the form's fields clean what a browser posts (missing text fields are empty)."""
    return {"http_body_arguments": "", "http_timeout": "", **values}


@pytest.mark.parametrize("config", HTTP_CONFIGS + HTTP_ODD_CONFIGS)
def test_an_http_config_saves_back_as_written(config: JSONObject) -> None:
    values, rest = http_config_split(config)

    assert http_config_join(as_posted(values), rest) == normal_http(config)


def test_the_structured_fields_hold_every_key_of_a_full_config() -> None:
    values, rest = http_config_split(HTTP_CONFIGS[9] | {"method": "POST", "body": {"arguments": ["a", "b"]}})

    assert rest is None
    assert values["http_auth_secret"] == "oauth" and values["http_auth_scope"] == "read write"
    assert values["http_body_kind"] == "arguments" and values["http_body_arguments"] == "a, b"


def test_what_the_fields_cannot_hold_stays_in_advanced_json() -> None:
    assert http_config_split(HTTP_ODD_CONFIGS[0])[1] == {"query": {"a=b": "c"}}
    assert http_config_split(HTTP_ODD_CONFIGS[6])[1] == {"unknown": True}


def test_a_key_given_in_both_places_is_an_error_on_its_field() -> None:
    with pytest.raises(Exception) as raised:
        http_config_join(as_posted({"http_method": "GET", "http_url": "https://a.example/"}), {"url": "https://b/"})

    assert "given twice" in str(raised.value)


def test_mapping_lines_are_read_as_name_equals_argument() -> None:
    values = as_posted(
        {"http_url": "https://api.example/", "http_query": "limit = max\n\n page=page ", "http_method": "GET"}
    )

    assert http_config_join(values, None)["query"] == {"limit": "max", "page": "page"}


def catalog_tools() -> list[JSONObject]:
    return [tool for spec in (DEMO, CONFORMANCE, BENCH) for tool in spec.tools]


@pytest.mark.parametrize("tool", catalog_tools(), ids=lambda tool: tool["name"])
def test_every_built_in_tool_opens_and_saves_without_loss(tool: JSONObject) -> None:
    config = tool.get("config") or {}
    backend = tool.get("backend", "static")
    if backend == "static":
        values, rest = static_config_split(config)
        expected = {key: value for key, value in config.items() if not (key == "isError" and value is False)}
        assert static_config_join(values, rest) == expected
    elif backend == "python":
        values, rest = PythonFunctionForm.split(config)
        assert PythonFunctionForm.join(values, rest) == config
    annotation_values, annotation_rest = annotations_split(tool.get("annotations"))
    assert annotations_join(annotation_values, annotation_rest) == (tool.get("annotations") or None)
    rows, icon_rest = icons_split(tool.get("icons"))
    assert icons_join(rows, icon_rest) == (tool.get("icons") or None)


def test_static_content_blocks_are_the_content_and_blocks_they_cannot_hold_stay_json() -> None:
    two = {"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}], "isError": True}
    # Not a PNG by its bytes ("hi"): the image fields would refuse it, so the whole content stays JSON.
    image = {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}], "structuredContent": {"a": 1}}

    assert static_config_split(two) == ({"static_blocks": two["content"], "static_is_error": True}, None)
    assert static_config_join({"static_blocks": two["content"], "static_is_error": True}, None) == two
    values, rest = static_config_split(image)
    assert values["static_blocks"] == [] and rest == image
    assert static_config_join(values, rest) == image


PROMPTS = [prompt for spec in (DEMO, CONFORMANCE, BENCH) for prompt in spec.prompts]
TEMPLATES = [template for spec in (DEMO, CONFORMANCE, BENCH) for template in spec.templates]


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda prompt: prompt["name"])
def test_every_built_in_prompts_arguments_and_messages_split_and_join_back(prompt: JSONObject) -> None:
    for key, fits in (("arguments", ROWS["argument_rows"][2]), ("messages", ROWS["message_rows"][2])):
        stored = prompt.get(key, [])
        rows, rest = rows_split(stored, fits)
        assert rows_join(rows, rest, field=key, box=key) == stored


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda template: template["name"])
def test_every_built_in_templates_config_splits_and_joins_back(template: JSONObject) -> None:
    config = template["config"]
    if template.get("backend", "static") == "static":
        values, rest = static_template_split(config)
        assert rest is None and static_template_join(values, rest) == config
    else:
        values, rest = PythonFunctionForm.split(config)
        assert PythonFunctionForm.join(values, rest) == config


def test_a_template_text_the_box_cannot_hold_stays_json() -> None:
    for config in ({"text": "a\r\nb"}, {"text": 1}, {"text": "x", "extra": True}):
        values, rest = static_template_split(config)
        assert static_template_join(values, rest) == config


def test_annotations_and_icons_round_trip_and_keep_what_the_fields_do_not_offer() -> None:
    annotations = {"title": "Find", "readOnlyHint": True, "destructiveHint": False, "custom": {"x": 1}}
    icons = [{"src": "https://x.example/i.png", "mimeType": "image/png", "sizes": ["48x48", "96x96"], "theme": "dark"}]
    odd_icons = [{"src": "https://x.example/i.png", "note": "kept"}]

    values, rest = annotations_split(annotations)
    assert values == {"annotation_title": "Find", "annotation_read_only": True, "annotation_destructive": False}
    assert rest == {"custom": {"x": 1}}
    assert annotations_join(values, rest) == annotations
    rows, rest_icons = icons_split(icons)
    assert rows == [
        {"src": "https://x.example/i.png", "mimeType": "image/png", "sizes": "48x48 96x96", "theme": "dark"}
    ]
    assert icons_join(rows, rest_icons) == icons
    assert icons_split(odd_icons) == ([], odd_icons)
