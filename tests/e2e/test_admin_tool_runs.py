"""Tool runs in the admin, in Debian's Chromium, for a tenant owner made only by a membership: a real client starts
a task on the live platform, and the list and the run's page follow its progress without a reload; the run's
Cancel button stops it; the pages pass axe."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.schema_and_run_pages import counter_tool_create, task_start
from tests.e2e.tenant_admin_pages import TenantAdminScene, admin_page, scene_create

FOLLOW_MS = 30_000  # long enough for a busy machine; the runs below end well within it


@pytest.fixture
def scene(live_platform: LiveServer) -> TenantAdminScene:
    scene = scene_create(live_platform)
    counter_tool_create(live_platform, scene)
    return scene


@pytest.fixture
def page(chromium: Any, live_platform: LiveServer, scene: TenantAdminScene) -> Iterator[Any]:
    with admin_page(
        chromium, live_platform.web_urls[0], scene.owner, timeout_ms=15_000, viewport={"width": 1400, "height": 900}
    ) as page:
        yield page


def test_the_list_follows_a_run_to_its_end_without_a_reload(
    page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    task_id = task_start(live_platform, scene, steps=6, delay_ms=400)
    page.goto(f"{live_platform.web_urls[0]}/admin/jobs/toolrun/")
    page.evaluate("window.samePage = true")
    row = page.get_by_role("row").filter(has=page.locator(f'[data-run="{task_id}"]'))

    expect(row).to_contain_text("Working")
    expect(row.locator("td.field-live_duration")).to_have_text("running")
    expect(row.get_by_label("Progress of count_slowly")).to_be_visible(timeout=FOLLOW_MS)
    expect(row).to_contain_text("Completed", timeout=FOLLOW_MS)
    # Its run time, from the call to its end (six steps of 400 ms), not the moment it took to queue it.
    expect(row.locator("td.field-live_duration")).to_have_text(re.compile(r"^\d+\.\d s$"))
    seconds = float(row.locator("td.field-live_duration").inner_text().removesuffix(" s"))
    assert seconds >= 2.4
    expect(row).to_contain_text("6 of 6")  # the last progress stays; the status message goes with completion
    assert row.get_by_label("Progress of count_slowly").get_attribute("aria-label") == "Progress of count_slowly"
    assert page.evaluate("window.samePage") is True


def test_a_runs_page_shows_it_progress_and_its_cancel_button_stops_it(
    page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    base = live_platform.web_urls[0]
    task_id = task_start(live_platform, scene, steps=200, delay_ms=300)
    page.goto(f"{base}/admin/jobs/toolrun/{task_id}/change/")
    page.evaluate("window.samePage = true")
    panel = page.get_by_role("region", name="This run now")

    message = panel.locator("[data-run-field=progress_message]")
    expect(message).to_have_text(re.compile(r"Counted \d+ of 200"), timeout=FOLLOW_MS)
    first = message.inner_text()
    expect(message).not_to_have_text(first, timeout=FOLLOW_MS)  # it moves on by itself
    expect(panel.get_by_role("progressbar", name="Progress")).to_be_visible()
    assert page.evaluate("window.samePage") is True
    assert axe_violations(page) == []
    panel.get_by_role("button", name="Cancel this run").click()

    expect(page.locator(".messagelist")).to_contain_text("The run was cancelled")
    expect(page.get_by_role("region", name="This run now")).to_contain_text("Cancelled in the admin")
    expect(page.get_by_role("button", name="Cancel this run")).to_have_count(0)


def test_the_run_list_passes_axe_while_a_run_works(
    page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    task_start(live_platform, scene, steps=20, delay_ms=300)
    page.goto(f"{live_platform.web_urls[0]}/admin/jobs/toolrun/")
    expect(page.get_by_label("Progress of count_slowly").first).to_be_visible(timeout=FOLLOW_MS)

    assert axe_violations(page) == []
    # Every column fits 1,400 px beside the menu and the filters: the list does not scroll sideways.
    assert page.evaluate("(r => r.scrollWidth <= r.clientWidth)(document.querySelector('#changelist .results'))")
    page.set_viewport_size({"width": 390, "height": 900})
    page.emulate_media(color_scheme="dark")
    page.reload()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert axe_violations(page) == []
