"""A tenant owner exports the tenant's configuration and imports a changed file in Debian's Chromium: the download
is the tenant's file, the upload shows the plan, Apply carries it out; a broken file shows its problems by line.
The pages pass axe-core."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import PASSWORD, axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import admin_page

# Runs in ``manage.py shell -c``: a tenant with one tool and its owner (by membership alone); prints its id.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from tenants import services
tenant = services.tenant_create(slug={slug!r}, name="Acme support")
answer = {{"content": [{{"type": "text", "text": "ok"}}]}}
services.tool_create(tenant=tenant, name="lookup_order", description="Find an order.", config=answer)
owner = get_user_model().objects.create_user({owner!r}, {owner_email!r}, {password!r})
services.membership_add(tenant=tenant, user=owner, role="owner")
print(tenant.pk)
"""


@dataclass(frozen=True)
class Scene:
    tenant: int
    slug: str
    owner: str


@pytest.fixture
def scene(live_platform: LiveServer) -> Scene:
    suffix = secrets.token_hex(3)
    slug, owner = f"acme-{suffix}", f"olivia-{suffix}"
    script = SETUP_SCRIPT.format(slug=slug, owner=owner, owner_email=f"{owner}@acme.example", password=PASSWORD)
    return Scene(int(live_platform.manage("shell", "-c", script).split()[-1]), slug, owner)


@pytest.fixture
def page(chromium: Any, live_platform: LiveServer, scene: Scene) -> Iterator[Any]:
    with admin_page(
        chromium,
        live_platform.web_urls[0],
        scene.owner,
        timeout_ms=15_000,
        viewport={"width": 1200, "height": 900},
        accept_downloads=True,
    ) as page:
        yield page


def test_an_owner_exports_the_configuration_and_applies_a_changed_file(
    page: Any, live_platform: LiveServer, scene: Scene, tmp_path: Path
) -> None:
    base = live_platform.web_urls[0]
    page.goto(f"{base}/admin/tenants/tenant/{scene.tenant}/change/")
    page.get_by_role("link", name="Configuration", exact=True).click()
    violations = {"configuration": axe_violations(page)}

    with page.expect_download() as downloading:
        page.get_by_role("link", name="Export configuration").click()
    exported = Path(downloading.value.path()).read_text()
    assert downloading.value.suggested_filename == f"{scene.slug}.tenant.yaml"
    assert "- name: lookup_order\n  description: Find an order.\n" in exported

    changed = tmp_path / "changed.yaml"
    changed.write_text(exported.replace("Find an order.", "Find an order by its number."))
    page.get_by_label("Configuration file (YAML)").set_input_files(str(changed))
    page.get_by_role("button", name="Show the plan").click()
    expect(page.locator("#plan-summary")).to_have_text("0 to add, 0 to change, 1 to take over, 0 to remove.")
    expect(page.get_by_text('description: "Find an order." → "Find an order by its number."')).to_be_visible()
    violations["plan"] = axe_violations(page)

    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".messagelist")).to_contain_text("Configuration applied: 0 to add, 0 to change, 1 to take over")

    broken = tmp_path / "broken.yaml"
    broken.write_text(exported.replace("version: 1", "version: 1\ngadgets: []"))
    page.get_by_role("link", name="Configuration", exact=True).click()
    page.get_by_label("Configuration file (YAML)").set_input_files(str(broken))
    page.get_by_role("button", name="Show the plan").click()
    expect(page.locator("#configuration-problems")).to_contain_text("broken.yaml cannot be applied")
    expect(page.locator("#configuration-problems")).to_contain_text("(gadgets): unknown key 'gadgets'")
    violations["problems"] = axe_violations(page)

    assert violations == {name: [] for name in violations}
