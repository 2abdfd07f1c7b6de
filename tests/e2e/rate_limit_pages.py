"""Rate limits in the admin, in Debian's Chromium: the set-up the browser test and the screenshots share, and the
screenshots (``python -m tests.e2e.rate_limit_pages [DIR]``; ``scripts/screenshots`` too).

A tenant owner (by membership alone) whose tenant has a ceiling platform staff set.
"""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.browser import PASSWORD
from tests.e2e.live import LiveServer
from tests.e2e.screenshots import Shots, run
from tests.e2e.tenant_admin_pages import admin_page

# Runs in ``manage.py shell -c``: a tenant with a ceiling and one limit, its owner; prints the ids the pages need.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from mcp_platform.quotas import services as quotas
from tenants import services
tenant = services.tenant_create(slug={slug!r}, name="Acme support")
ceiling = quotas.rate_ceiling_set(tenant=tenant, rate=600, period=60, burst=100)
limit = quotas.rate_limit_create(tenant=tenant, scope="client", rate=60, period=60, burst=20)
owner = get_user_model().objects.create_user({owner!r}, {owner_email!r}, {password!r})
services.membership_add(tenant=tenant, user=owner, role="owner")
print(tenant.pk, ceiling.pk, limit.pk)
"""


@dataclass(frozen=True)
class RateLimitScene:
    tenant: int
    ceiling: int
    limit: int
    owner: str


def scene_create(live: LiveServer) -> RateLimitScene:
    suffix = secrets.token_hex(3)
    owner = f"olivia-{suffix}"
    script = SETUP_SCRIPT.format(
        slug=f"acme-{suffix}", owner=owner, owner_email=f"{owner}@acme.example", password=PASSWORD
    )
    tenant, ceiling, limit = (int(v) for v in live.manage("shell", "-c", script).split()[-3:])
    return RateLimitScene(tenant, ceiling, limit, owner)


def fill_limit(page: Any, base: str, scene: RateLimitScene, *, tool: str, rate: str, period: str, burst: str) -> None:
    """The add form of a tool limit, filled in (not saved)."""
    page.goto(f"{base}/admin/quotas/ratelimit/add/?tenant={scene.tenant}")
    page.get_by_label("Scope").select_option(label="Tool (each tool's calls)")
    page.get_by_label("Tool name").fill(tool)
    page.get_by_label("Rate").fill(rate)
    page.get_by_label("Period").select_option(label=period)
    page.get_by_label("Burst").fill(burst)


def take(live: LiveServer, browser: Any, out: Path) -> list[Path]:
    base = live.web_urls[0]
    scene = scene_create(live)
    with admin_page(browser, base, scene.owner, viewport={"width": 1200, "height": 800}) as page:
        shot = Shots(out, page)

        fill_limit(page, base, scene, tool="search", rate="20", period="per second", burst="50")
        page.get_by_role("button", name="Save", exact=True).click()
        shot("rate-limit-above-ceiling")
        page.get_by_label("Rate").fill("5")
        page.get_by_role("button", name="Save", exact=True).click()
        shot("rate-limits")
        page.goto(f"{base}/admin/quotas/rateceiling/{scene.ceiling}/change/")
        shot("rate-ceiling-read-only")
    return shot.paths


if __name__ == "__main__":
    sys.exit(run(sys.argv, take))
