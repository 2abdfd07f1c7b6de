"""The catalog's history in the admin, in Debian's Chromium: the set-up the browser test and the screenshots share,
and the screenshots (``python -m tests.e2e.history_pages [DIR]``; ``scripts/screenshots`` too).

A tenant admin (by membership alone) whose tool was added and edited twice, and a deleted tool.
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

# Runs in ``manage.py shell -c``: the tool's three versions are made through the services, as the admin makes them.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from tenants import services
from tenants.history.revisions import catalog_revision
tenant = services.tenant_create(slug={slug!r}, name="Acme support")
admin = get_user_model().objects.create_user({admin!r}, {admin_email!r}, {password!r})
services.membership_add(tenant=tenant, user=admin, role="admin")
text = {{"content": [{{"type": "text", "text": "It is sunny."}}]}}
schema = {{"type": "object", "properties": {{"city": {{"type": "string"}}}}}}
with catalog_revision(user=admin):
    tool = services.tool_create(tenant=tenant, name="weather", description="Today's weather.", config=text,
                                input_schema=schema)
with catalog_revision(user=admin):
    services.tool_update(tool=tool, data={{"description": "The weather, hour by hour."}})
with catalog_revision(user=admin):
    services.tool_update(tool=tool, data={{"description": "The weather this week.",
                                          "input_schema": {{**schema, "required": ["city"]}}}})
with catalog_revision(user=admin):
    gone = services.tool_create(tenant=tenant, name="forecast", description="Tomorrow.", config=text)
with catalog_revision(user=admin):
    services.tool_delete(tool=gone)
print(tenant.pk, tool.pk)
"""


@dataclass(frozen=True)
class HistoryScene:
    tenant: int
    tool: int
    admin: str


def scene_create(live: LiveServer) -> HistoryScene:
    suffix = secrets.token_hex(3)
    admin = f"alice-{suffix}"
    script = SETUP_SCRIPT.format(
        slug=f"acme-{suffix}", admin=admin, admin_email=f"{admin}@acme.example", password=PASSWORD
    )
    tenant, tool = (int(v) for v in live.manage("shell", "-c", script).split()[-2:])
    return HistoryScene(tenant, tool, admin)


def open_first_version(page: Any, base: str, scene: HistoryScene) -> None:
    """The tool's history, then its first version's page."""
    page.goto(f"{base}/admin/tenants/tool/{scene.tool}/history/")
    page.get_by_role("link", name="Version 1: compare and restore").click()


def take(live: LiveServer, browser: Any, out: Path) -> list[Path]:
    base = live.web_urls[0]
    scene = scene_create(live)
    with admin_page(browser, base, scene.admin, viewport={"width": 1200, "height": 900}) as page:
        shot = Shots(out, page)

        page.goto(f"{base}/admin/tenants/tool/{scene.tool}/history/")
        shot("history-versions")
        open_first_version(page, base, scene)
        shot("history-version-diff")
        page.get_by_role("button", name="Restore this version").click()
        shot("history-restored")
        page.goto(f"{base}/admin/tenants/tool/deleted/")
        shot("history-recover-deleted")
    return shot.paths


if __name__ == "__main__":
    sys.exit(run(sys.argv, take))
