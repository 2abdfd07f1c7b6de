"""The tool form's JSON Schema editor in Debian's Chromium, for a tenant owner made only by a membership: JSON
highlighted, syntax errors placed by line and column at once, the server's schema rules reported as you type, the
form a client would render previewed; saved as typed; Tab leaves it; axe-clean; and without script, a textarea."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import TenantAdminScene, scene_create, sign_in

ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "order": {"type": "string", "title": "Order number", "description": "As printed on the receipt."},
        "reason": {"type": "string", "enum": ["damaged", "late"]},
    },
    "required": ["order"],
}


@pytest.fixture
def scene(live_platform: LiveServer) -> TenantAdminScene:
    return scene_create(live_platform)


def owner_page(chromium: Any, live: LiveServer, scene: TenantAdminScene, *, script: bool = True) -> Any:
    context = chromium.new_context(viewport={"width": 1200, "height": 900}, java_script_enabled=script)
    context.set_default_timeout(15_000)
    page = context.new_page()
    sign_in(page, live.web_urls[0], scene.owner)
    page.goto(f"{live.web_urls[0]}/admin/tenants/tool/{scene.our_tool}/change/")
    return page


@pytest.fixture
def page(chromium: Any, live_platform: LiveServer, scene: TenantAdminScene) -> Iterator[Any]:
    """The owner, signed in, on their tool's change page."""
    page = owner_page(chromium, live_platform, scene)
    yield page
    page.context.close()


def replace_schema(page: Any, text: str) -> None:
    """Select everything in the input schema's editor and put ``text`` in its place, as a paste would."""
    page.get_by_label("Input schema").focus()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text)


def test_the_schema_is_highlighted_and_checked_as_it_stands(page: Any) -> None:
    expect(page.locator(".CodeMirror")).to_have_count(2)  # input and output schema
    expect(page.locator("#id_input_schema_problems")).to_have_text("No problems found.")
    assert page.locator("#id_input_schema").is_hidden()
    expect(page.locator(".CodeMirror .cm-property").first).to_have_text('"type"')


def test_a_syntax_error_is_placed_by_line_and_column(page: Any) -> None:
    replace_schema(page, '{\n  "type": "object"\n  "properties": {}\n}')

    expect(page.locator("#id_input_schema_problems")).to_have_text(
        "Line 3, column 3: Expected ',' or '}' after the property value, found \"\\\"\"."
    )
    expect(page.locator(".schema-editor-error-line")).to_have_count(1)

    replace_schema(page, '{"type": "object", "properties": {}}')
    expect(page.locator("#id_input_schema_problems")).to_have_text("No problems found.")
    expect(page.locator(".schema-editor-error-line")).to_have_count(0)


def test_the_servers_schema_rules_are_reported_as_you_type(page: Any) -> None:
    replace_schema(page, '{"type": "object", "properties": {"n": {"type": "integr"}}}')

    expect(page.locator("#id_input_schema_problems")).to_contain_text(
        "The input schema is not a valid JSON Schema (at properties/n/type)"
    )

    replace_schema(page, '{"type": "array"}')
    expect(page.locator("#id_input_schema_problems")).to_have_text(
        'The input schema must have "type": "object" at its root.'
    )


def test_the_preview_is_the_form_a_client_renders(page: Any) -> None:
    replace_schema(page, json.dumps(ORDER_SCHEMA, indent=2))
    preview = page.get_by_role("region", name="Preview: the form a client renders")

    expect(preview.get_by_label("Order number")).to_be_visible()
    expect(preview.get_by_text("As printed on the receipt.")).to_be_visible()
    preview.get_by_role("button", name="Check the preview's values").click()
    expect(preview.locator(".schema-editor-preview-outcome")).to_have_text("Order number is required.")

    preview.get_by_label("Order number").fill("A-1001")
    preview.get_by_label("Order number").press("Enter")  # must not submit the tool's form
    preview.get_by_label("reason").select_option("late")
    preview.get_by_role("button", name="Check the preview's values").click()

    outcome = preview.locator(".schema-editor-preview-outcome").inner_text()
    assert json.loads(outcome.removeprefix("Arguments: ")) == {"order": "A-1001", "reason": "late"}
    assert page.url.endswith("/change/")


def test_what_is_typed_is_saved(page: Any, live_platform: LiveServer, scene: TenantAdminScene) -> None:
    replace_schema(page, json.dumps(ORDER_SCHEMA, indent=2))
    page.get_by_role("button", name="Save and continue editing").click()

    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    assert json.loads(page.locator("#id_input_schema").input_value()) == ORDER_SCHEMA


def test_tab_leaves_the_editor_and_the_page_passes_axe(page: Any) -> None:
    page.get_by_label("Input schema").focus()
    page.keyboard.press("Tab")

    focused = page.evaluate("document.activeElement.id")
    assert focused != "id_input_schema_editor"
    assert page.evaluate("document.activeElement.closest('.CodeMirror') === null")
    replace_schema(page, json.dumps(ORDER_SCHEMA))
    expect(page.get_by_label("Order number")).to_be_visible()
    assert axe_violations(page) == []


def test_without_script_the_schema_is_a_textarea_that_saves(
    chromium: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    page = owner_page(chromium, live_platform, scene, script=False)
    try:
        page.get_by_label("Input schema").fill(json.dumps(ORDER_SCHEMA))
        page.get_by_role("button", name="Save and continue editing").click()

        expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
        assert json.loads(page.get_by_label("Input schema").input_value()) == ORDER_SCHEMA
        page.get_by_label("Input schema").fill('{"type": "array"}')
        page.get_by_role("button", name="Save and continue editing").click()
        expect(page.get_by_text(re.compile('must have "type": "object" at its root'))).to_be_visible()
    finally:
        page.context.close()
