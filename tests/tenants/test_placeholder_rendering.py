"""Placeholder substitution in prompt messages and static template text."""

from __future__ import annotations

from tenants.rendering import prompt_placeholders, prompt_render, template_text_render


def test_prompt_placeholders_are_found_anywhere_in_content() -> None:
    content = {"type": "resource", "resource": {"uri": "x://{{a}}", "text": "{{b}} and {{ c }}"}}

    assert prompt_placeholders(content) == {"a", "b"}


def test_prompt_render_replaces_declared_arguments_in_every_string_of_content() -> None:
    messages = [{"role": "user", "content": {"type": "resource", "resource": {"uri": "{{u}}", "text": "see {{u}}"}}}]

    rendered = prompt_render(messages, {"u": "docs://a"}, argument_names=["u"])

    assert rendered == [
        {"role": "user", "content": {"type": "resource", "resource": {"uri": "docs://a", "text": "see docs://a"}}}
    ]
    assert messages[0]["content"]["resource"]["uri"] == "{{u}}"


def test_prompt_render_leaves_undeclared_placeholders_and_roles_alone() -> None:
    messages = [{"role": "user", "content": {"type": "text", "text": "{{x}} {{y}}"}}]

    rendered = prompt_render(messages, {"x": "1", "y": "2"}, argument_names=["x"])

    assert rendered == [{"role": "user", "content": {"type": "text", "text": "1 {{y}}"}}]


def test_missing_optional_argument_renders_empty() -> None:
    messages = [{"role": "user", "content": {"type": "text", "text": "[{{opt}}]"}}]

    assert prompt_render(messages, {}, argument_names=["opt"])[0]["content"]["text"] == "[]"


def test_template_text_keeps_json_braces_and_unknown_names() -> None:
    text = '{"id": "{id}", "nested": {"k": "{id}"}, "other": "{nope}"}'

    assert template_text_render(text, {"id": "7"}) == '{"id": "7", "nested": {"k": "7"}, "other": "{nope}"}'


def test_template_text_substitutes_in_one_pass() -> None:
    assert template_text_render("{a}/{b}", {"a": "{b}", "b": "B"}) == "{b}/B"


def test_template_text_without_variables_is_unchanged() -> None:
    assert template_text_render("{literal}", {}) == "{literal}"
