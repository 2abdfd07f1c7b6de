"""The activity log and the usage dashboard in Debian's Chromium, as a tenant admin made only through a
membership: their tenant's records only, another tenant's record a 404, filters, the dashboard's time axis and its
drill-down into the filtered log, counts in words, latency per upstream; axe-clean in light and dark, at 1,400 and
390 px."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from tests.e2e.activity_pages import ActivityScene, scene_create
from tests.e2e.browser import axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import admin_page

LOG = "/admin/activity/activityrecord/"


@pytest.fixture
def scene(live_platform: LiveServer) -> ActivityScene:
    return scene_create(live_platform)


@pytest.fixture
def page(chromium: Any, live_platform: LiveServer, scene: ActivityScene) -> Iterator[Any]:
    with admin_page(
        chromium, live_platform.web_urls[0], scene.admin, timeout_ms=15_000, viewport={"width": 1280, "height": 900}
    ) as page:
        yield page


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
    page.wait_for_load_state()
    outcomes = page.locator("td.field-outcome_shown").all_inner_texts()
    assert outcomes and set(outcomes) == {"Tool error (isError)"}
    page.locator("#changelist-filter").get_by_role("link", name="Cursor").click()
    expect(page).to_have_url(re.compile(r"client="))
    page.wait_for_load_state()
    clients = page.locator("td.field-client").all_inner_texts()
    assert clients and all(c.startswith("Cursor") for c in clients)


def test_the_dashboard_draws_the_tenants_usage(page: Any, live_platform: LiveServer, scene: ActivityScene) -> None:
    base = live_platform.web_urls[0]
    page.goto(base + LOG)
    page.get_by_role("link", name="Usage dashboard").click()
    expect(page.get_by_role("heading", name="Usage of Acme support")).to_be_visible()
    expect(page.get_by_role("heading", name="Calls over the last 24 hours, per hour")).to_be_visible()
    hours = page.locator("svg.usage-timeline text.x-label").all_text_contents()
    assert len(hours) in (8, 9) and all(re.fullmatch(r"\d\d:00", hour) for hour in hours), hours
    tools = page.get_by_role("table", name="Calls and latency per tool, resource or prompt")
    expect(tools.get_by_role("rowheader", name="refund_order")).to_be_visible()
    upstreams = page.get_by_role("table", name="Calls and latency per upstream")
    expect(upstreams.get_by_role("rowheader", name="warehouse")).to_be_visible()
    expect(upstreams).to_contain_text(re.compile(r"\d+ calls, \d+ errors?\s+[\d.]+ / [\d.]+ ms"))
    text = page.locator("#content-main").inner_text()
    assert re.search(r"\b1 calls\b|\b1 errors\b", text) is None and "400 calls" in text
    assert "globex" not in page.content().lower()
    page.get_by_role("link", name="Last 7 days").click()
    expect(page.get_by_role("link", name="Last 7 days")).to_have_attribute("aria-current", "page")
    expect(page.get_by_role("heading", name="Calls over the last 7 days, per day")).to_be_visible()
    assert page.locator("svg.usage-timeline text.x-label").count() == 8
    response = page.goto(f"{base}{LOG}usage/?tenant={scene.theirs}")
    assert response is not None and response.status == 404


def test_the_dashboard_leads_into_the_log_filtered_to_a_tool_a_client_or_an_hour(
    page: Any, live_platform: LiveServer, scene: ActivityScene
) -> None:
    base = live_platform.web_urls[0]
    dashboard = f"{base}{LOG}usage/?window=24h"
    page.goto(dashboard)
    tools = page.get_by_role("table", name="Calls and latency per tool, resource or prompt")
    shown = tools.get_by_role("row").filter(has_text="refund_order").inner_text()
    calls = int(re.search(r"(\d+) calls?", shown).group(1))  # type: ignore[union-attr]
    tools.get_by_role("link", name="refund_order").click()
    expect(page).to_have_url(re.compile(r"target=refund_order"))
    page.wait_for_load_state()
    targets = page.locator("td.field-target").all_inner_texts()
    assert targets and set(targets) == {"refund_order"} and len(targets) == calls
    expect(page.locator("#changelist-filter li.selected").filter(has_text="refund_order")).to_have_count(1)

    page.goto(dashboard)
    page.get_by_role("table", name="Calls and latency per client").get_by_role("link", name="Cursor").click()
    expect(page).to_have_url(re.compile(r"client="))
    page.wait_for_load_state()
    clients = page.locator("td.field-client").all_inner_texts()
    assert clients and all(c.startswith("Cursor") for c in clients)

    page.goto(dashboard)
    columns = page.locator("svg.usage-timeline a")
    titles = columns.locator("title").all_text_contents()
    assert len(titles) == 25 and titles[-1].endswith("UTC: " + titles[-1].split("UTC: ")[1])
    in_hour, busiest = max((int(re.search(r"UTC: (\d+) calls?", t).group(1)), i) for i, t in enumerate(titles))  # type: ignore[union-attr]
    columns.nth(busiest).locator("rect.hit").click()
    expect(page).to_have_url(re.compile(r"at__lt="))
    page.wait_for_load_state()
    query = parse_qs(urlsplit(page.url).query)
    assert set(query) == {"kind__exact", "tenant__id__exact", "at__gte", "at__lt"}, page.url
    assert page.locator("#result_list tbody tr").count() == in_hour


# Each scheme at both widths: every page once in each scheme, the dashboard at all four (axe takes seconds a page).
AXE_PAGES = {
    "light": {1400: ("log", "filtered", "dashboard", "admin change"), 390: ("dashboard", "month")},
    "dark": {1400: ("dashboard", "month"), 390: ("log", "filtered", "dashboard", "admin change")},
}


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_activity_pages_pass_axe_at_1400_and_390_px(
    page: Any, live_platform: LiveServer, scene: ActivityScene, scheme: str
) -> None:
    base = live_platform.web_urls[0]
    page.emulate_media(color_scheme=scheme)
    page.goto(f"{base}{LOG}?kind__exact=admin")
    record = page.locator("#result_list tbody a").first.get_attribute("href")
    assert record is not None
    page.goto(base + record)
    changes = page.get_by_role("table").filter(has_text="Before")
    expect(changes.get_by_role("row", name="Description Find an order. Find an order by its number.")).to_be_visible()
    paths = {
        "log": LOG,
        "filtered": f"{LOG}?outcome__exact=error&period=24h",
        "dashboard": f"{LOG}usage/",
        "month": f"{LOG}usage/?window=30d",
        "admin change": record,
    }
    checked = {}
    for width, names in AXE_PAGES[scheme].items():
        page.set_viewport_size({"width": width, "height": 900})
        for name in names:
            page.goto(base + paths[name])
            wide = page.evaluate("document.documentElement.scrollWidth")
            checked[f"{name} {width}"] = axe_violations(page) + ([f"{wide} px wide"] if wide > width else [])
    assert checked == {name: [] for name in checked}
