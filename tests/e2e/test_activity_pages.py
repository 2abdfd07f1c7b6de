"""The activity log and the usage dashboard in Debian's Chromium, as a tenant admin made only through a
membership: their tenant's records only, another tenant's record a 404, filters, the dashboard's charts; axe-clean."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.activity_pages import ActivityScene, scene_create
from tests.e2e.browser import axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import sign_in

LOG = "/admin/activity/activityrecord/"


@pytest.fixture
def scene(live_platform: LiveServer) -> ActivityScene:
    return scene_create(live_platform)


@pytest.fixture
def page(chromium: Any, live_platform: LiveServer, scene: ActivityScene) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    sign_in(page, live_platform.web_urls[0], scene.admin)
    yield page
    context.close()


def test_the_log_shows_only_the_admins_tenant(page: Any, live_platform: LiveServer, scene: ActivityScene) -> None:
    base = live_platform.web_urls[0]
    page.goto(base + LOG)
    expect(page.get_by_role("link", name="lookup_order").first).to_be_visible()
    assert "globex" not in page.content().lower()
    response = page.goto(f"{base}{LOG}{scene.their_record}/change/")
    assert response is not None and response.status == 404


def test_filters_narrow_the_log(page: Any, live_platform: LiveServer, scene: ActivityScene) -> None:
    base = live_platform.web_urls[0]
    page.goto(base + LOG)
    page.locator("#changelist-filter").get_by_role("link", name="Tool error (isError)").click()
    expect(page).to_have_url(f"{base}{LOG}?outcome__exact=tool_error")
    outcomes = page.locator("td.field-outcome_shown").all_inner_texts()
    assert outcomes and set(outcomes) == {"Tool error (isError)"}
    page.locator("#changelist-filter").get_by_role("link", name="Cursor").click()
    clients = page.locator("td.field-client").all_inner_texts()
    assert clients and all(c.startswith("Cursor") for c in clients)


def test_the_dashboard_draws_the_tenants_usage(page: Any, live_platform: LiveServer, scene: ActivityScene) -> None:
    base = live_platform.web_urls[0]
    page.goto(base + LOG)
    page.get_by_role("link", name="Usage dashboard").click()
    expect(page.get_by_role("heading", name="Usage of Acme support")).to_be_visible()
    expect(page.get_by_role("img", name="Calls and errors per tool")).to_be_visible()
    expect(page.get_by_role("table", name="Per tool").get_by_role("rowheader", name="refund_order")).to_be_visible()
    assert "globex" not in page.content().lower()
    page.get_by_role("link", name="Last hour").click()
    expect(page.get_by_role("link", name="Last hour")).to_have_attribute("aria-current", "page")
    response = page.goto(f"{base}{LOG}usage/?tenant={scene.theirs}")
    assert response is not None and response.status == 404


def test_the_activity_pages_pass_axe(page: Any, live_platform: LiveServer, scene: ActivityScene) -> None:
    base = live_platform.web_urls[0]
    checked = {}
    for name, path in (
        ("log", LOG),
        ("filtered", f"{LOG}?outcome__exact=error&period=24h"),
        ("dashboard", f"{LOG}usage/"),
        ("dashboard month", f"{LOG}usage/?window=30d"),
    ):
        page.goto(base + path)
        checked[name] = axe_violations(page)
    page.goto(base + LOG)
    record = page.locator("#result_list tbody a").first.get_attribute("href")
    assert record is not None
    page.goto(base + record)
    expect(page.get_by_text("Find an order by its number.")).to_be_visible()
    checked["record"] = axe_violations(page)
    assert checked == {name: [] for name in checked}
