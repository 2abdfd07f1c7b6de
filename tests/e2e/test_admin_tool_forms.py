"""The catalog forms follow the backend, in Debian's Chromium, for a tenant owner made only by a membership: choosing
a backend shows its section alone; the owner adds a Python tool (its input schema made from the function's
signature, following the function chosen until written by hand), an HTTP tool with a secret picked by name, a static
tool of a text, an uploaded image and a resource link, and a prompt of argument and message rows; the tool, prompt,
template and resource forms pass axe in the light and dark themes at 390 and 1,400 px, and the schema editors follow
the admin's theme toggle both ways."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import TenantAdminScene, scene_create, sign_in
from tests.images import PNG

# Runs in ``manage.py shell -c``: what platform staff and the owner did before (a grant, a secret).
GRANT_AND_SECRET = """
from tenants.backends.python_grants import python_function_grant
from tenants.models import Tenant
from tenants.secrets import secret_set
tenant = Tenant.objects.get(pk={tenant})
python_function_grant(tenant=tenant, function="demo.count_slowly")
python_function_grant(tenant=tenant, function="demo.echo")
secret_set(tenant=tenant, name="pets-key", value="never-shown-{tenant}")
"""
STORED_TOOL = """
import json
from tenants.models import Tool
tool = Tool.objects.get(tenant_id={tenant}, name={name!r})
print(json.dumps({{"config": tool.config, "input_schema": tool.input_schema}}))
"""
COUNT_SCHEMA = {
    "type": "object",
    "properties": {"steps": {"type": "integer", "default": 5}, "delay_ms": {"type": "integer", "default": 500}},
}
ECHO_SCHEMA = {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
EDITOR_BACKGROUND = "getComputedStyle(document.querySelector('div.CodeMirror')).backgroundColor"
LIGHT, DARK = "rgb(255, 255, 255)", "rgb(27, 27, 27)"


@pytest.fixture
def scene(live_platform: LiveServer) -> TenantAdminScene:
    scene = scene_create(live_platform)
    live_platform.manage("shell", "-c", GRANT_AND_SECRET.format(tenant=scene.ours))
    return scene


def browser_page(chromium: Any, live: LiveServer, scene: TenantAdminScene, *, width: int, scheme: str) -> Any:
    context = chromium.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    context.set_default_timeout(15_000)
    page = context.new_page()
    sign_in(page, live.web_urls[0], scene.owner)
    return page


@pytest.fixture
def page(chromium: Any, live_platform: LiveServer, scene: TenantAdminScene) -> Iterator[Any]:
    page = browser_page(chromium, live_platform, scene, width=1400, scheme="light")
    yield page
    page.context.close()


def stored(live: LiveServer, scene: TenantAdminScene, name: str) -> dict[str, Any]:
    output = live.manage("shell", "-c", STORED_TOOL.format(tenant=scene.ours, name=name))
    return json.loads(output.strip().splitlines()[-1])


def open_add_form(page: Any, live: LiveServer, scene: TenantAdminScene, name: str, backend: str) -> None:
    page.goto(f"{live.web_urls[0]}/admin/tenants/tool/add/?tenant={scene.ours}")
    page.get_by_label("Name:", exact=True).fill(name)
    page.get_by_label("Backend:").select_option(label=backend)


def save(page: Any) -> None:
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("was added successfully")


def test_choosing_a_backend_shows_its_section_alone(
    page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    open_add_form(page, live_platform, scene, "switching", "Static")
    python, static, http = (page.locator(f"fieldset.backend-section-{b}") for b in ("python", "static", "http"))

    expect(static).to_be_visible()
    expect(python).to_be_hidden()
    expect(http).to_be_hidden()
    page.get_by_label("Backend:").select_option(label="HTTP request")
    expect(http).to_be_visible()
    expect(static).to_be_hidden()
    expect(page.get_by_label("Secret:", exact=True)).to_be_hidden()  # no authentication chosen yet
    page.get_by_label("Authentication:").select_option(label="Bearer token")
    expect(page.get_by_label("Secret:", exact=True)).to_be_visible()
    expect(page.get_by_label("Header or parameter name:")).to_be_hidden()
    options = [o.strip() for o in page.locator("#id_backend option").all_inner_texts()]
    assert "Upstream MCP server" not in options


def test_an_owner_adds_a_python_tool_whose_schema_comes_from_its_function(
    page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    open_add_form(page, live_platform, scene, "count", "Python function")
    page.get_by_label("Python function:").select_option("demo.count_slowly")

    expect(page.locator('[data-python-function="demo.count_slowly"]')).to_contain_text(
        "demo.count_slowly(steps: int = 5, delay_ms: int = 500)"
    )
    save(page)
    tool = stored(live_platform, scene, "count")
    assert tool["config"] == {"function": "demo.count_slowly"}
    assert tool["input_schema"]["properties"] == {
        "steps": {"type": "integer", "default": 5},
        "delay_ms": {"type": "integer", "default": 500},
    }


def test_the_input_schema_follows_the_chosen_function_until_it_is_written_by_hand(
    page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    def schema() -> Any:
        return json.loads(page.evaluate("document.getElementById('id_input_schema').schemaEditor.getValue()"))

    open_add_form(page, live_platform, scene, "follows", "Python function")
    function = page.get_by_label("Python function:")
    function.select_option("demo.count_slowly")
    assert schema() == COUNT_SCHEMA
    function.select_option("demo.echo")
    assert schema() == ECHO_SCHEMA
    expect(page.locator("#id_input_schema_preview-message")).to_be_visible()  # the client's form follows too

    written = {"type": "object", "properties": {"message": {"type": "string", "maxLength": 80}}}
    page.locator("#id_input_schema_editor").focus()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(json.dumps(written))
    function.select_option("demo.count_slowly")
    assert schema() == written, "written by hand: kept"
    save(page)
    tool = stored(live_platform, scene, "follows")
    assert (tool["config"], tool["input_schema"]) == ({"function": "demo.count_slowly"}, written)


def test_an_owner_adds_an_http_tool_with_a_secret_picked_by_name(
    page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    open_add_form(page, live_platform, scene, "pets", "HTTP request")
    page.get_by_label("Method:").select_option("POST")
    page.get_by_label("URL template:").fill("https://api.example/pets")
    page.get_by_label("Fixed headers:").fill("Accept = application/json")
    page.get_by_label("Authentication:").select_option(label="API key in a header")
    page.get_by_label("Header or parameter name:").fill("X-API-Key")
    secret = page.get_by_label("Secret:", exact=True)

    assert "never-shown" not in page.content()
    secret.select_option("pets-key")
    save(page)
    assert stored(live_platform, scene, "pets")["config"] == {
        "method": "POST",
        "url": "https://api.example/pets",
        "static_headers": {"Accept": "application/json"},
        "auth": {"type": "header", "secret": "pets-key", "name": "X-API-Key"},
    }


def test_an_owner_adds_a_static_tool_of_a_text_an_image_and_a_link(
    page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    open_add_form(page, live_platform, scene, "greeting", "Static")
    page.get_by_role("group", name="Block 1").get_by_label("Text", exact=True).fill("Hello.")
    page.get_by_role("button", name="Add a block").click()
    page.get_by_role("button", name="Remove block 2").click()  # an empty one the page offered: numbers follow
    second = page.get_by_role("group", name="Block 2")
    second.get_by_label("Kind").select_option(label="Image")
    expect(second.get_by_label("Text", exact=True)).to_be_hidden()  # only an image's inputs show
    second.get_by_label("Image file").set_input_files({"name": "pixel.png", "mimeType": "image/png", "buffer": PNG})
    page.get_by_role("button", name="Add a block").click()
    third = page.get_by_role("group", name="Block 3")
    third.get_by_label("Kind").select_option(label="Resource link")
    third.get_by_label("URI").fill("https://example.com/report.pdf")
    third.get_by_label("Name").fill("report")
    page.get_by_label("Read-only:").select_option(label="Yes")
    save(page)

    assert stored(live_platform, scene, "greeting")["config"] == {
        "content": [
            {"type": "text", "text": "Hello."},
            {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
            {"type": "resource_link", "uri": "https://example.com/report.pdf", "name": "report"},
        ]
    }
    page.locator("#result_list").get_by_role("link", name="greeting").click()
    preview = page.get_by_role("img", name="The image of block 2")
    expect(preview).to_be_visible()
    assert preview.evaluate("img => img.complete && img.naturalWidth") == 1  # the data: URL loads on the admin


def test_the_tool_form_passes_axe_in_both_themes_at_390_and_1400_px_and_follows_the_theme_toggle(
    chromium: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    found: dict[str, list[str]] = {}
    overflow: dict[str, int] = {}
    toggled: dict[str, list[str]] = {}
    for scheme in ("dark", "light"):
        page = browser_page(chromium, live_platform, scene, width=390, scheme=scheme)
        try:
            for width in (390, 1400):
                page.set_viewport_size({"width": width, "height": 900})
                for backend in ("HTTP request", "Python function", "Static"):
                    page.goto(f"{live_platform.web_urls[0]}/admin/tenants/tool/add/?tenant={scene.ours}")
                    page.get_by_label("Backend:").select_option(label=backend)
                    if backend == "Static":  # every kind of block's inputs on the page
                        page.get_by_role("group", name="Block 1").get_by_label("Kind").select_option(label="Image")
                        page.get_by_role("group", name="Block 2").get_by_label("Kind").select_option(
                            label="Resource link"
                        )
                        page.get_by_role("button", name="Add a block").click()
                        page.get_by_role("group", name="Block 3").get_by_label("Kind").select_option(
                            label="Embedded resource"
                        )
                    where = f"{backend} at {width} px, {scheme}"
                    found[where] = axe_violations(page)
                    overflow[where] = page.evaluate(
                        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
                    )
            # The system's scheme first (auto), then the toggle's next two: light and dark, in either order.
            toggled[scheme] = [page.evaluate(EDITOR_BACKGROUND)]
            for _ in range(2):
                page.get_by_role("button", name=re.compile("Toggle theme")).first.click()
                toggled[scheme].append(page.evaluate(EDITOR_BACKGROUND))
        finally:
            page.context.close()

    assert found == {where: [] for where in found}
    assert overflow == {where: 0 for where in overflow}  # nothing wider than the window
    assert toggled == {"dark": [DARK, LIGHT, DARK], "light": [LIGHT, DARK, LIGHT]}


def test_prompts_templates_and_resources_are_filled_in_without_json(
    chromium: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    base = live_platform.web_urls[0]
    page = browser_page(chromium, live_platform, scene, width=1400, scheme="light")
    found: dict[str, list[str]] = {}
    overflow: dict[str, int] = {}
    try:
        page.goto(f"{base}/admin/tenants/prompt/add/?tenant={scene.ours}")
        page.get_by_label("Name:", exact=True).fill("review")
        argument = page.get_by_role("group", name="Argument 1")
        argument.get_by_label("Name").fill("language")
        argument.get_by_label("Required").select_option(label="Yes")
        page.get_by_role("group", name="Message 1").get_by_label("Text").fill("Review this {{language}} code.")
        page.get_by_role("button", name="Add a message").click()
        answer = page.get_by_role("group", name="Message 2")
        answer.get_by_label("Role").select_option(label="Assistant")
        answer.get_by_label("Text").fill("Gladly.")
        page.get_by_label("Backend:").select_option(label="Python function")
        expect(answer).to_be_hidden()  # a Python prompt's function makes its messages
        page.get_by_label("Backend:").select_option(label="Static")
        save(page)
        # Opened again, the prompt is in its rows (what they store exactly: tests/tenants/admin/).
        page.locator("#result_list").get_by_role("link", name="review").click()
        expect(page.get_by_role("group", name="Argument 1").get_by_label("Name")).to_have_value("language")
        expect(page.get_by_role("group", name="Argument 1").get_by_label("Required")).to_have_value("yes")
        expect(page.get_by_role("group", name="Message 2").get_by_label("Role")).to_have_value("assistant")
        expect(page.get_by_role("group", name="Message 2").get_by_label("Text")).to_have_value("Gladly.")
        expect(page.get_by_label("Messages (JSON):")).to_have_value("")

        for kind in ("prompt", "resourcetemplate", "resource"):
            page.goto(f"{base}/admin/tenants/{kind}/add/?tenant={scene.ours}")
            for scheme, width in (("light", 390), ("dark", 1400), ("dark", 390), ("light", 1400)):
                page.emulate_media(color_scheme=scheme)
                page.set_viewport_size({"width": width, "height": 900})
                where = f"{kind} at {width} px, {scheme}"
                found[where] = axe_violations(page)
                overflow[where] = page.evaluate(
                    "document.documentElement.scrollWidth - document.documentElement.clientWidth"
                )
    finally:
        page.context.close()

    assert found == {where: [] for where in found}
    assert overflow == {where: 0 for where in overflow}
