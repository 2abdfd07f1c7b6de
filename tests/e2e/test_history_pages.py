"""A tenant admin rolls a tool back from its history, in Debian's Chromium: the history lists three versions, the
first version's page shows the description and the schema against the current ones, restoring it (a POST behind
the page's button) brings its description back as the newest version; the pages pass axe-core."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import axe_violations
from tests.e2e.history_pages import HistoryScene, open_first_version, scene_create
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import admin_page


@pytest.fixture
def scene(live_platform: LiveServer) -> HistoryScene:
    return scene_create(live_platform)


@pytest.fixture
def page(chromium: Any, live_platform: LiveServer, scene: HistoryScene) -> Iterator[Any]:
    with admin_page(
        chromium, live_platform.web_urls[0], scene.admin, timeout_ms=15_000, viewport={"width": 1200, "height": 900}
    ) as page:
        yield page


def test_a_tool_is_rolled_back_from_its_history_and_the_pages_pass_axe(
    page: Any, live_platform: LiveServer, scene: HistoryScene
) -> None:
    base = live_platform.web_urls[0]
    checked = {}

    page.goto(f"{base}/admin/tenants/tool/{scene.tool}/change/")
    page.get_by_role("link", name="History").click()
    versions = page.locator("#versions tbody tr")
    expect(versions).to_have_count(3)
    expect(versions.first).to_contain_text("Description, Input schema")
    checked["history"] = axe_violations(page)

    open_first_version(page, base, scene)
    expect(page.get_by_role("row", name="Description The weather this week. Today's weather.")).to_be_visible()
    expect(page.locator(".history-removed", has_text='"required": [')).to_be_visible()
    checked["version"] = axe_violations(page)
    page.get_by_role("button", name="Restore this version").click()

    expect(page.locator(".messagelist")).to_contain_text("Restored tool weather to version 1")
    expect(versions).to_have_count(4)
    page.goto(f"{base}/admin/tenants/tool/{scene.tool}/change/")
    expect(page.get_by_role("textbox", name="Description:")).to_have_value("Today's weather.")

    page.goto(f"{base}/admin/tenants/tool/")
    page.get_by_role("link", name="Recover deleted tools").click()
    expect(page.get_by_role("link", name="forecast")).to_be_visible()
    checked["recover"] = axe_violations(page)
    assert checked == {name: [] for name in checked}
