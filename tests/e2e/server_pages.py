"""Screenshots of a tenant's named servers in the admin (``python -m tests.e2e.server_pages [DIR]``;
``scripts/screenshots`` too): a server's page with its selection editor and what it serves, and the tenant page
listing its servers' URLs.

The README's Acme, protected, with its owner (by membership alone): the owner adds a read-only server by tag.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.e2e.browser import PASSWORD
from tests.e2e.live import LiveServer
from tests.e2e.screenshots import Shots, run
from tests.e2e.tenant_admin_pages import admin_page

OWNER = "olivia"
WIDTH = 1600
# Runs in ``manage.py shell -c``: Acme's tools of the README's walkthrough, two of them tagged read-only, a server
# for long jobs, and the owner. Prints the tenant's id.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from tenants import services
from tenants.servers import server_create
tenant = services.tenant_create(slug="acme", name="Acme", requires_authorization=True)
def text(words):
    return {{"content": [{{"type": "text", "text": words}}]}}
services.tool_create(tenant=tenant, name="hello", description="Says hello.", config=text("Hello from Acme!"),
                     tags=["read-only"])
services.tool_create(tenant=tenant, name="whoami", description="Who the API thinks we are.", config=text("acme"),
                     tags=["read-only", "http"])
services.tool_create(tenant=tenant, name="count_slowly", description="Counts, with progress.",
                     config=text("Counted."), tags=["tasks"])
services.tool_create(tenant=tenant, name="refund_order", description="Refunds an order.", config=text("Refunded."),
                     tags=["billing"])
server_create(tenant=tenant, slug="jobs", title="Long jobs", instructions="Long calls run as tasks.",
              selection=["tools:count_slowly"])
owner = get_user_model().objects.create_user({owner!r}, "olivia@acme.example", {password!r})
services.membership_add(tenant=tenant, user=owner, role="owner")
print(tenant.pk)
"""


def frame(page: Any, first: str, last: str, *, margin: int = 16, below: int = 16) -> None:
    """Size the viewport to the stretch of the page from the element ``first`` to the end of ``last`` (CSS
    selectors), ``margin`` pixels above and ``below`` under, and scroll to it: the picture shows that part of a long
    page, with the admin's sidebar beside it."""
    top, bottom = page.evaluate(
        """([first, last]) => [
            document.querySelector(first).getBoundingClientRect().top + window.scrollY,
            document.querySelector(last).getBoundingClientRect().bottom + window.scrollY,
        ]""",
        [first, last],
    )
    page.set_viewport_size({"width": WIDTH, "height": round(bottom - top) + margin + below})
    page.evaluate("top => window.scrollTo(0, top)", round(top) - margin)


def take(live: LiveServer, browser: Any, out: Path) -> list[Path]:
    base = live.web_urls[0]
    tenant = int(live.manage("shell", "-c", SETUP_SCRIPT.format(owner=OWNER, password=PASSWORD)).split()[-1])
    with admin_page(browser, base, OWNER, viewport={"width": WIDTH, "height": 900}, color_scheme="light") as page:
        shot = Shots(out, page)

        page.goto(f"{base}/admin/tenants/tenant/{tenant}/change/")
        page.get_by_role("link", name="Add a server").click()
        page.get_by_label("Slug").fill("read-only")
        page.get_by_label("Title").fill("Read-only")
        page.get_by_label("Instructions").fill("Look things up; nothing here changes anything.")
        page.locator("input[name=tags][value='read-only']").check()
        page.get_by_role("button", name="Save and continue editing").click()
        page.locator(".server-preview").wait_for()
        frame(
            page, "fieldset.module", ".field-preview"
        )  # past the Connect section: the fields, the editor, the preview
        shot("server-selection", full_page=False)

        page.goto(f"{base}/admin/tenants/tenant/{tenant}/change/")
        page.locator("#server-read-only summary").click()  # its URLs, its token's resource and Claude Code's command
        frame(page, "#tenant-servers", "#server-read-only tbody tr:nth-child(2)", below=0)
        shot("tenant-page-servers", full_page=False)
    return shot.paths


if __name__ == "__main__":
    sys.exit(run(sys.argv, take))
