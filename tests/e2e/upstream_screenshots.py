"""Screenshots of the upstream admin for the README: the add form, the list with health, mirrored tools, and the
review of changes an upstream that holds them proposed.

A live platform and a real SDK upstream, as in the federation tests, and Debian's Chromium.
Usage: ``python -m tests.e2e.upstream_screenshots [DIR]``.
"""

from __future__ import annotations

import concurrent.futures
import sys
import tempfile
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from playwright.sync_api import sync_playwright

from tests.e2e.browser import launch_chromium
from tests.e2e.live import LiveServer
from tests.e2e.screenshots import DEFAULT_DIR, Shots
from tests.e2e.upstreams import UpstreamServer, federation_platform, upstream_server

PASSWORD = "correct horse battery staple"

# Runs in ``manage.py shell -c``: an administrator, a tenant, and an upstream whose host is gone.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from django.utils import timezone
from tenants import services
from tenants.models import Upstream
from tenants.secrets import secret_set
get_user_model().objects.create_superuser("admin", "admin@example.com", {password!r})
tenant = services.tenant_create(slug="acme", name="Acme")
secret_set(tenant=tenant, name="docs-token", value="screenshot-only")
Upstream.objects.create(
    tenant=tenant, name="billing", url="https://billing.internal.example/mcp", prefix="billing_",
    consecutive_failures=3, last_error="upstream 'billing': ConnectError: [Errno 111] Connection refused",
    last_error_at=timezone.now(), circuit_open_until=timezone.now() + timezone.timedelta(seconds=30),
)
"""


def take(live: LiveServer, upstream: UpstreamServer, browser: Any, out: Path) -> list[Path]:
    base = live.web_urls[0]
    live.manage("shell", "-c", SETUP_SCRIPT.format(password=PASSWORD))
    context = browser.new_context(viewport={"width": 1600, "height": 800})
    page = context.new_page()
    shot = Shots(out, page)

    page.goto(f"{base}/admin/login/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()

    page.goto(f"{base}/admin/tenants/upstream/add/")
    page.locator("#id_tenant").select_option(label="acme")
    page.locator("#id_name").fill("docs")
    page.locator("#id_url").fill(upstream.url)
    page.locator("#id_auth_type").select_option(value="bearer")
    page.locator("#id_auth_secret").select_option("docs-token")
    shot("upstream-add")
    page.locator("#id_auth_type").select_option(value="")
    page.locator("#id_auth_secret").select_option("")
    page.locator("input[name=_save]").click()
    shot("upstream-list")
    page.goto(f"{base}/admin/tenants/tool/?backend__exact=upstream")
    shot("upstream-tools")

    # The upstream holds its changes; it rewords echo (with a new optional argument) and makes fail require one.
    live.manage(
        "shell",
        "-c",
        "from tenants.models import Upstream; "
        "Upstream.objects.filter(name='docs').update(change_policy='hold', withhold_incompatible=True)",
    )
    reshapes = (
        ("echo", "Say the text back, louder: pass a volume from 1 to 11.", ("text",), ("volume",)),
        ("fail", "Fails, saying why.", ("reason",), ()),
    )
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread
        for name, description, required, optional in reshapes:
            reshape = partial(upstream.reshape, name, description, required=required, optional=optional)
            pool.submit(anyio.run, reshape).result(timeout=60)
    page.goto(f"{base}/admin/tenants/upstream/")
    page.get_by_role("link", name="docs").click()
    page.get_by_role("button", name="Refresh now").click()
    page.get_by_role("link", name="Review changes (2)").click()
    shot("upstream-review-changes")
    context.close()
    return shot.paths


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    out.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="screenshots-") as tmp:
        upstream = upstream_server(stack, Path(tmp) / "upstream")
        live = federation_platform(stack, Path(tmp) / "platform")
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            try:
                for path in take(live, upstream, browser, out):
                    print(path)
            finally:
                browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
