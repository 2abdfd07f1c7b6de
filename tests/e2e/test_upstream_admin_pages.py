"""A tenant owner runs their upstream and OpenAPI sources from the admin in Debian's Chromium, against one live
platform and a real SDK upstream process: the upstream's page lists its items, a rename typed there is what clients
list, Refresh and Test report back, a dead upstream turns red; an OpenAPI source is imported again through the
review of what changes. The pages pass axe-core in the light and dark themes, at 1,400 and 390 px."""

from __future__ import annotations

import concurrent.futures
import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from playwright.sync_api import expect

from tests.e2e.browser import axe_violations
from tests.e2e.tenant_admin_pages import admin_page
from tests.e2e.upstreams import OwnedUpstream as Scene
from tests.e2e.upstreams import owned_upstream

# A platform, an upstream and a browser on a shared 2-core machine: the first test also pays for starting them.
pytestmark = pytest.mark.timeout(300)

PETSTORE = Path(__file__).resolve().parents[1] / "tenants" / "openapi" / "fixtures" / "petstore-3.0.yaml"
WIDE = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    with ExitStack() as stack:
        yield owned_upstream(stack, tmp_path_factory.mktemp("upstream-admin"))


@pytest.fixture
def page(chromium: Any, scene: Scene) -> Iterator[Any]:
    with admin_page(chromium, scene.base, scene.owner, timeout_ms=20_000, viewport=WIDE) as page:
        yield page


def tool_names(scene: Scene) -> set[str]:
    """tools/list of the tenant, as a 2026-07-28 SDK client sees it (in a thread: Playwright owns this one's loop)."""

    async def listed() -> set[str]:
        async with Client(scene.live.endpoint(scene.slug), cache=None, read_timeout_seconds=30) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, listed).result(timeout=60)


def item_row(page: Any, remote: str) -> Any:
    return page.locator("fieldset.upstream-items tbody tr").filter(has=page.locator(f"code:text-is('{remote}')"))


def test_a_rename_typed_on_the_upstreams_page_is_what_clients_list_and_a_refresh_keeps_it(
    page: Any, scene: Scene
) -> None:
    page.goto(scene.upstream_page)
    expect(item_row(page, "echo")).to_be_visible()
    expect(item_row(page, "greet")).to_be_visible()
    expect(item_row(page, "notes://readme")).to_be_visible()

    page.get_by_label("Name of echo").fill("say")
    page.get_by_label("Description of greet").fill("Greets <b>you</b>, our way.")
    page.get_by_role("button", name="Save and continue editing").click()

    expect(page.locator(".messagelist")).to_contain_text("Items of up: 0 added, 2 updated, 0 removed.")
    expect(page.get_by_label("Name of echo")).to_have_value("say")
    names = tool_names(scene)
    assert "say" in names and "up_echo" not in names

    page.get_by_role("button", name="Refresh now").click()
    expect(page.locator(".messagelist")).to_contain_text("Refreshed up: 0 added, 0 updated, 0 removed.")
    assert "say" in tool_names(scene)

    # A name another tool holds is refused on its row, and what was typed stays.
    page.get_by_label("Name of echo").fill("up_fail")
    page.get_by_label("Description of echo").fill("Typed and kept.")
    page.get_by_role("button", name="Save and continue editing").click()
    expect(item_row(page, "echo").locator(".errorlist")).to_contain_text("is taken by the tool 'up_fail'")
    expect(page.get_by_label("Description of echo")).to_have_value("Typed and kept.")


def test_the_test_button_reports_the_connection_and_a_dead_upstream_turns_red(page: Any, scene: Scene) -> None:
    page.goto(scene.upstream_page)
    page.get_by_role("button", name="Test the connection").click()
    expect(page.locator(".messagelist")).to_contain_text(
        "Test of up: connected over Streamable HTTP, protocol 2026-07-28"
    )
    expect(page.locator(".upstream-health-ok")).to_have_text("OK")

    scene.upstream.kill()
    try:
        page.get_by_role("button", name="Test the connection").click()
        expect(page.locator(".messagelist .error")).to_contain_text("Test of up failed")
        expect(page.locator(".field-health .upstream-health-failing")).to_have_text("Failing")
        page.goto(f"{scene.base}/admin/tenants/upstream/")
        row = page.locator("#result_list tbody tr").filter(has_text="up")
        # The platform's own watch on the upstream may have failed too by now, opening the circuit (two failures).
        label = row.locator(".upstream-health-failing, .upstream-health-circuit")
        expect(label).to_have_text(re.compile("^(Failing|Circuit open)$"))
        expect(row.locator(".upstream-health-error")).to_contain_text("upstream 'up'")
        colour = label.evaluate("e => getComputedStyle(e).borderLeftColor")
        red, amber = "rgb(196, 38, 46)", "rgb(199, 124, 2)"
        assert colour == (red if label.inner_text() == "Failing" else amber), colour
    finally:
        scene.upstream.start()
    page.goto(scene.upstream_page)
    page.get_by_role("button", name="Test the connection").click()
    expect(page.locator(".field-health .upstream-health-ok")).to_have_text("OK")


def test_importing_an_openapi_source_again_shows_what_changes_before_it_is_applied(page: Any, scene: Scene) -> None:
    def preview() -> None:
        page.goto(f"{scene.base}/admin/tenants/openapisource/import/")
        page.get_by_label("Tenant").select_option(label=scene.slug)
        page.get_by_label("Or a document file").set_input_files(str(PETSTORE))
        page.get_by_label("Prefix").fill("pets_")
        page.get_by_role("button", name="Preview the operations").click()

    preview()
    for key in ("POST /pets", "PUT /pets/{petId}", "DELETE /pets/{petId}"):
        page.get_by_label(f"Import {key}").uncheck()
    page.get_by_role("button", name="Review the changes").click()
    expect(page.locator(".openapi-review")).to_contain_text("2 added, 0 changed, 0 removed, 0 unchanged.")
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("2 created")

    page.get_by_role("link", name="Import again").click()
    expect(page.get_by_label("Prefix")).to_have_value("pets_")
    preview()
    expect(page.get_by_label("Import GET /pets", exact=True)).to_be_checked()
    expect(page.get_by_label("Import POST /pets", exact=True)).not_to_be_checked()
    page.get_by_label("Import POST /pets", exact=True).check()
    page.get_by_label("Import GET /pets", exact=True).uncheck()
    page.get_by_role("button", name="Review the changes").click()
    review = page.locator(".openapi-review")
    expect(review).to_contain_text("1 added, 0 changed, 1 removed, 1 unchanged.")
    expect(page.locator("#review-removed")).to_have_text("pets_listPets")
    assert "pets_listPets" in tool_names(scene), "the review changed nothing"
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("1 created")
    assert "pets_listPets" not in tool_names(scene) and "pets_createPet" in tool_names(scene)


def test_the_pages_pass_axe_in_both_themes_at_1400_and_390_px(chromium: Any, scene: Scene) -> None:
    for scheme in ("light", "dark"):
        with admin_page(
            chromium, scene.base, scene.owner, timeout_ms=20_000, viewport=WIDE, color_scheme=scheme
        ) as page:
            for viewport in (WIDE, PHONE):
                page.set_viewport_size(viewport)
                where = f"{scheme} at {viewport['width']} px"
                for path in (scene.upstream_page, f"{scene.base}/admin/tenants/upstream/"):
                    page.goto(path)
                    assert axe_violations(page) == [], f"{path}, {where}"
                page.goto(f"{scene.base}/admin/tenants/openapisource/import/")
                page.get_by_label("Tenant").select_option(label=scene.slug)
                page.get_by_label("Or a document file").set_input_files(str(PETSTORE))
                page.get_by_label("Prefix").fill("axe_")
                page.get_by_role("button", name="Preview the operations").click()
                expect(page.locator("#operations")).to_be_visible()
                assert axe_violations(page) == [], f"preview, {where}"
                # The same file again (its location is its name), under another prefix: nothing is ticked at first.
                page.get_by_label("Import GET /pets", exact=True).check()
                page.get_by_role("button", name="Review the changes").click()
                expect(page.locator(".openapi-review")).to_be_visible()
                assert axe_violations(page) == [], f"review, {where}"
                page.goto(scene.upstream_page)
                items = page.locator("fieldset.upstream-items")
                width = items.evaluate("e => e.getBoundingClientRect().right")
                assert width <= viewport["width"], f"the items reach {width}px, {where}"
