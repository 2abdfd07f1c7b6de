"""A tenant owner sets rate limits in the admin, in Debian's Chromium: a limit above the ceiling platform staff set
is refused with the reason, one within it is saved, the ceiling can be read but not changed; the pages pass
axe-core."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.rate_limit_pages import RateLimitScene, fill_limit, scene_create
from tests.e2e.tenant_admin_pages import admin_page


@pytest.fixture
def scene(live_platform: LiveServer) -> RateLimitScene:
    return scene_create(live_platform)


@pytest.fixture
def page(chromium: Any, live_platform: LiveServer, scene: RateLimitScene) -> Iterator[Any]:
    with admin_page(
        chromium, live_platform.web_urls[0], scene.owner, timeout_ms=15_000, viewport={"width": 1200, "height": 900}
    ) as page:
        yield page


def test_an_owner_sets_a_tool_limit_within_the_ceiling(
    page: Any, live_platform: LiveServer, scene: RateLimitScene
) -> None:
    base = live_platform.web_urls[0]

    fill_limit(page, base, scene, tool="search", rate="20", period="per second", burst="50")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Above this tenant's ceiling of 600 per minute")).to_be_visible()

    page.get_by_label("Rate").fill("5")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("was added successfully")
    expect(page.get_by_role("cell", name="search", exact=True)).to_be_visible()
    expect(page.get_by_role("cell", name="5 per second, 50 at once")).to_be_visible()


def test_an_owner_reads_the_ceiling_but_cannot_change_it(
    page: Any, live_platform: LiveServer, scene: RateLimitScene
) -> None:
    base = live_platform.web_urls[0]

    page.goto(f"{base}/admin/quotas/rateceiling/")
    expect(page.get_by_role("link", name="Add rate ceiling")).to_have_count(0)
    page.goto(f"{base}/admin/quotas/rateceiling/{scene.ceiling}/change/")
    expect(page.get_by_text("600", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Save", exact=True)).to_have_count(0)


def test_the_rate_limit_pages_pass_axe(page: Any, live_platform: LiveServer, scene: RateLimitScene) -> None:
    base = live_platform.web_urls[0]
    checked = {}
    for name, path in (
        ("limits", "/admin/quotas/ratelimit/"),
        ("add limit", f"/admin/quotas/ratelimit/add/?tenant={scene.tenant}"),
        ("limit", f"/admin/quotas/ratelimit/{scene.limit}/change/"),
        ("ceiling", f"/admin/quotas/rateceiling/{scene.ceiling}/change/"),
    ):
        page.goto(base + path)
        checked[name] = axe_violations(page)

    assert checked == {name: [] for name in checked}
