"""The tool console in Debian's Chromium: the set-up the browser test and the screenshots share, and the screenshots
themselves (``python -m tests.e2e.tool_console_pages [DIR]``; ``scripts/screenshots`` too).

The person is made an admin of the conformance tenant (its Python tools report progress, ask questions and run as
tasks) and of a tenant of their own with an HTTP tool, by memberships alone: no staff flag, no model permission.
"""

from __future__ import annotations

import secrets
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.browser import PASSWORD
from tests.e2e.live import LiveServer
from tests.e2e.screenshots import Shots, run
from tests.e2e.tenant_admin_pages import admin_page
from tests.rest_api import start_rest_api

# Runs in ``manage.py shell -c``; prints the ids of the tools the console runs.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from tenants import services
from tenants.models import Tenant, Tool
admin = get_user_model().objects.create_user({username!r}, {email!r}, {password!r})
conformance = Tenant.objects.get(slug="conformance")
services.membership_add(tenant=conformance, user=admin, role="admin")
shop = services.tenant_create(slug={slug!r}, name="Pet shop")
services.tenant_update(tenant=shop, data={{"outbound_allowed_networks": ["127.0.0.1/32"]}})
services.membership_add(tenant=shop, user=admin, role="owner")
pet = {{"type": "object", "properties": {{"pet_id": {{"type": "string", "description": "The pet's number"}}}},
       "required": ["pet_id"]}}
http = services.tool_create(tenant=shop, name="get_pet", description="Looks a pet up in the shop's REST API.",
                            backend="http", config={{"url": {api!r} + "/pets/{{pet_id}}"}}, input_schema=pet)
names = ("test_streaming_elicitation", "slow_compute", "test_sampling", "test_elicitation")
ids = [Tool.objects.get(tenant=conformance, name=name).pk for name in names]
print(*ids, http.pk)
"""


@dataclass(frozen=True)
class ConsoleScene:
    admin: str
    asking_tool: int
    task_tool: int
    sampling_tool: int
    form_tool: int
    http_tool: int

    def console(self, base: str, tool: int) -> str:
        return f"{base}/admin/tenants/tool/{tool}/console/"


def scene_create(live: LiveServer, api_base: str) -> ConsoleScene:
    suffix = secrets.token_hex(3)
    username = f"cora-{suffix}"
    script = SETUP_SCRIPT.format(
        username=username,
        email=f"{username}@shop.example",
        password=PASSWORD,
        slug=f"shop-{suffix}",
        api=api_base,
    )
    asking, task, sampling, form, http = (int(v) for v in live.manage("shell", "-c", script).split()[-5:])
    return ConsoleScene(username, asking, task, sampling, form, http)


def run_until_asked(page: Any, base: str, scene: ConsoleScene) -> None:
    """Start the tool that reports progress and then asks; return once its question is on the page."""
    page.goto(scene.console(base, scene.asking_tool))
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_role("region", name="The tool asks").wait_for()


def take(live: LiveServer, browser: Any, out: Path) -> list[Path]:
    base = live.web_urls[0]
    with ExitStack() as stack:
        api = start_rest_api(stack, Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="rest-api-"))))
        scene = scene_create(live, api.base)
        page = stack.enter_context(admin_page(browser, base, scene.admin, viewport={"width": 1200, "height": 800}))
        shot = Shots(out, page)
        run_until_asked(page, base, scene)
        shot("tool-console-asking")
        page.get_by_label("ok").check()
        page.get_by_role("button", name="Submit").click()
        page.get_by_role("status").filter(has_text="Finished.").wait_for()
        shot("tool-console-finished")
        page.goto(scene.console(base, scene.http_tool))
        page.get_by_label("pet_id").fill("7")
        page.get_by_role("button", name="Run", exact=True).click()
        page.get_by_role("status").filter(has_text="Finished.").wait_for()
        shot("tool-console-http")
        page.get_by_label("pet_id").fill("8")
        page.get_by_role("button", name="Run", exact=True).click()
        page.locator("#console-history-rows > tr").nth(1).wait_for()
        page.get_by_text("Raw JSON-RPC exchange").click()
        page.get_by_role("button", name="curl").click()
        shot("tool-console-history")
        page.get_by_role("button", name="Edit as JSON").click()
        shot("tool-console-json", page.locator("#console-form"))
    return shot.paths


if __name__ == "__main__":
    sys.exit(run(sys.argv, take))
