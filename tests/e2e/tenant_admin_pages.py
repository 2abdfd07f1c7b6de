"""A tenant owner in the admin, in Debian's Chromium: the set-up both the browser test and the screenshots use,
and the screenshots themselves (``python -m tests.e2e.tenant_admin_pages [DIR]``; ``scripts/screenshots`` too).

The owner is made only through a membership: no staff flag, no model permission.
"""

from __future__ import annotations

import re
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.browser import PASSWORD
from tests.e2e.live import LiveServer
from tests.e2e.screenshots import Shots, run

# Runs in ``manage.py shell -c``: two tenants with a tool each, an owner of the first (by membership alone), a
# person with an account but no membership yet. Prints the ids the pages need.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from tenants import services
users = get_user_model().objects
answer = {{"content": [{{"type": "text", "text": "ok"}}]}}
ours = services.tenant_create(slug={ours!r}, name="Acme support")
theirs = services.tenant_create(slug={theirs!r}, name="Globex billing")
mine = services.tool_create(tenant=ours, name="lookup_order", description="Find an order by its number.", config=answer)
services.tool_create(tenant=ours, name="refund_order", description="Refund an order.", config=answer)
hidden = services.tool_create(tenant=theirs, name="globex_invoice", description="Another tenant's tool.", config=answer)
owner = users.create_user({owner!r}, {owner_email!r}, {password!r})
services.membership_add(tenant=ours, user=owner, role="owner")
users.create_user({newcomer!r}, {newcomer_email!r}, {password!r})
print(ours.pk, theirs.pk, mine.pk, hidden.pk)
"""


@dataclass(frozen=True)
class TenantAdminScene:
    ours_slug: str
    ours: int
    theirs: int
    our_tool: int
    their_tool: int
    owner: str
    newcomer: str
    newcomer_email: str


def scene_create(live: LiveServer) -> TenantAdminScene:
    suffix = secrets.token_hex(3)
    owner, newcomer = f"olivia-{suffix}", f"nadia-{suffix}"
    script = SETUP_SCRIPT.format(
        ours=f"acme-{suffix}",
        theirs=f"globex-{suffix}",
        owner=owner,
        owner_email=f"{owner}@acme.example",
        newcomer=newcomer,
        newcomer_email=f"{newcomer}@acme.example",
        password=PASSWORD,
    )
    ours, theirs, our_tool, their_tool = (int(v) for v in live.manage("shell", "-c", script).split()[-4:])
    return TenantAdminScene(
        f"acme-{suffix}", ours, theirs, our_tool, their_tool, owner, newcomer, f"{newcomer}@acme.example"
    )


def sign_in(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/admin/")


@contextmanager
def admin_page(
    browser: Any, base: str, username: str, *, timeout_ms: float | None = None, **context_options: Any
) -> Iterator[Any]:
    """The page of a fresh browser context (``context_options``: Playwright's, such as ``viewport``), signed in to
    the admin as ``username``, every wait bounded by ``timeout_ms`` when given; the context is closed after."""
    context = browser.new_context(**context_options)
    try:
        if timeout_ms is not None:
            context.set_default_timeout(timeout_ms)
        page = context.new_page()
        sign_in(page, base, username)
        yield page
    finally:
        context.close()


def add_member(page: Any, base: str, scene: TenantAdminScene, who: str, role: str = "Admin") -> None:
    page.goto(f"{base}/admin/tenants/membership/add/?tenant={scene.ours}")
    page.get_by_label("Username or e-mail").fill(who)
    page.get_by_label("Role").select_option(label=role)
    page.get_by_role("button", name="Save", exact=True).click()


def mailed_link(live: LiveServer, address: str) -> str:
    """The invitation link in the last message the platform mailed to ``address`` (the file-based mail backend)."""
    found = ""
    for message in sorted(Path(live.command_env["EMAIL_FILE_PATH"]).glob("*.log")):
        text = message.read_text()
        if f"To: {address}" in text:
            links = re.findall(r"https?://\S+/account/invitation/[A-Za-z0-9_\-]+/", text)
            found = links[-1] if links else found
    assert found, f"no invitation mailed to {address}"
    return found


def take(live: LiveServer, browser: Any, out: Path) -> list[Path]:
    base = live.web_urls[0]
    scene = scene_create(live)
    with admin_page(browser, base, scene.owner, viewport={"width": 1200, "height": 800}) as page:
        shot = Shots(out, page)

        shot("tenant-admin-index")
        page.goto(f"{base}/admin/tenants/tenant/{scene.ours}/change/")
        shot("tenant-admin-tenant-page")
        page.goto(f"{base}/admin/tenants/tool/")
        shot("tenant-admin-tools")
        page.goto(f"{base}/admin/tenants/membership/add/?tenant={scene.ours}")
        page.get_by_label("Username or e-mail").fill(scene.newcomer_email)
        shot("tenant-admin-add-member")
        page.get_by_role("button", name="Save", exact=True).click()
        shot("tenant-admin-members")
    return shot.paths


if __name__ == "__main__":
    sys.exit(run(sys.argv, take))
