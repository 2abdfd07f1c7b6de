"""SchemaForm (static/admin-schema-form.js) in Debian's Chromium, on an admin page of a tenant owner made only by a
membership: the form a client renders for a JSON Schema, filled by its labels, read back, checked, axe-clean."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import TenantAdminScene, scene_create, sign_in

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Full name", "description": "As on the card.", "minLength": 2},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "born": {"type": "string", "format": "date"},
        "meeting": {"type": "string", "format": "date-time"},
        "seats": {"type": "integer", "minimum": 1, "maximum": 9, "default": 2},
        "ratio": {"type": "number", "exclusiveMaximum": 1},
        "vip": {"type": "boolean", "title": "VIP"},
        "size": {"type": "string", "enum": ["s", "m", "l"]},
        "plan": {"oneOf": [{"const": "free", "title": "Free plan"}, {"const": "pro", "title": "Pro plan"}]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "days": {
            "type": "array",
            "title": "Days",
            "items": {"anyOf": [{"const": "mon", "title": "Monday"}, {"const": "tue", "title": "Tuesday"}]},
        },
        "address": {
            "type": "object",
            "title": "Address",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
            "required": ["city"],
        },
    },
    "required": ["name", "email", "plan"],
}


@pytest.fixture
def scene(live_platform: LiveServer) -> TenantAdminScene:
    return scene_create(live_platform)


@pytest.fixture
def page(chromium: Any, live_platform: LiveServer, scene: TenantAdminScene) -> Iterator[Any]:
    """The owner, signed in, on the admin index with SchemaForm loaded and an empty container to render into."""
    context = chromium.new_context(viewport={"width": 1200, "height": 900}, timezone_id="UTC")
    context.set_default_timeout(15_000)
    page = context.new_page()
    base = live_platform.web_urls[0]
    sign_in(page, base, scene.owner)
    page.add_script_tag(url=f"{base}/static/admin-schema-form.js")
    page.evaluate(
        """() => { const main = document.querySelector('#content');
                   const box = document.createElement('div'); box.id = 'preview'; main.append(box); }"""
    )
    yield page
    context.close()


def render(page: Any, schema: dict[str, Any], values: dict[str, Any] | None = None) -> None:
    page.evaluate(
        """([schema, values]) => { window.form = SchemaForm.render(document.getElementById('preview'), schema,
                                                                  {values, idPrefix: 'args'}); }""",
        [schema, values],
    )


def test_an_empty_form_asks_for_what_is_required(page: Any) -> None:
    render(page, SCHEMA)

    messages = page.evaluate("form.validate()")

    assert messages == ["Full name is required.", "email is required.", "plan is required."]
    expect(page.get_by_label("Full name")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#args-name-error")).to_have_text("Full name is required.")
    assert page.evaluate("form.value()") == {"seats": 2, "vip": False}  # the default and the unticked box


def test_a_filled_form_reads_back_as_the_arguments(page: Any) -> None:
    render(page, SCHEMA)

    page.get_by_label("Full name").fill("Ada Lovelace")
    page.get_by_label("email").fill("ada@example.com")
    page.get_by_label("site").fill("https://ada.example")
    page.get_by_label("born").fill("1815-12-10")
    page.get_by_label("meeting").fill("2026-11-24T15:30")
    page.get_by_label("seats").fill("4")
    page.get_by_label("ratio").fill("0.5")
    page.get_by_label("VIP").check()
    page.get_by_label("size").select_option(label="m")
    page.get_by_label("plan").select_option(label="Pro plan")
    page.get_by_role("button", name="Add tags item").click()
    page.keyboard.type("alpha")
    page.get_by_role("button", name="Add tags item").click()
    page.keyboard.type("beta")
    page.get_by_role("group", name="Days").get_by_label("Tuesday").check()
    page.get_by_role("group", name="Address").get_by_label("city").fill("London")

    assert page.evaluate("form.validate()") == []
    assert page.evaluate("form.value()") == {
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "site": "https://ada.example",
        "born": "1815-12-10",
        "meeting": "2026-11-24T15:30:00Z",
        "seats": 4,
        "ratio": 0.5,
        "vip": True,
        "size": "m",
        "plan": "pro",
        "tags": ["alpha", "beta"],
        "days": ["tue"],
        "address": {"city": "London"},
    }


def test_values_out_of_bounds_are_reported_per_field(page: Any) -> None:
    render(page, SCHEMA, {"name": "A", "email": "not-an-address", "plan": "free", "seats": 12, "ratio": 1})
    page.get_by_role("group", name="Address").get_by_label("zip").fill("12")

    messages = page.evaluate("form.validate()")

    assert messages == [
        "Full name must be at least 2 characters.",
        "email must be an e-mail address.",
        "seats must be at most 9.",
        "ratio must be less than 1.",
        "address.city is required.",
        "address.zip must match the pattern ^[0-9]{5}$.",
    ]
    page.get_by_label("seats").fill("3")
    assert "seats must be at most 9." not in page.evaluate("form.validate()")
    expect(page.get_by_label("seats")).not_to_have_attribute("aria-invalid", "true")


def test_values_fill_the_form_and_tenant_text_stays_text(page: Any) -> None:
    schema = {
        "type": "object",
        "properties": {
            "note": {"type": "string", "title": "<img src=x onerror=alert(1)>", "description": "<b>bold?</b>"},
            "days": {"type": "array", "items": {"type": "string", "enum": ["mon", "tue"]}},
        },
    }
    render(page, schema, {"note": "hello", "days": ["tue"]})

    expect(page.get_by_label("<img src=x onerror=alert(1)>")).to_have_value("hello")
    expect(page.get_by_text("<b>bold?</b>")).to_be_visible()
    assert page.locator("#preview img").count() == 0
    assert page.evaluate("form.value()") == {"note": "hello", "days": ["tue"]}


def test_the_rendered_form_passes_axe_and_works_by_keyboard(page: Any) -> None:
    render(page, SCHEMA)
    page.get_by_label("Full name").focus()
    page.keyboard.press("Tab")

    assert page.evaluate("document.activeElement.id") == "args-email"
    page.evaluate("form.validate()")  # the messages shown are part of what axe checks
    assert axe_violations(page) == []
