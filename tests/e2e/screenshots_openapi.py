"""A screenshot of the admin's OpenAPI import preview for the README: a live embedded platform previewing the
document of the FastAPI test app (run under uvicorn), in Debian's Chromium.
Usage: ``python -m tests.e2e.screenshots_openapi [DIR]``.
"""

from __future__ import annotations

import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.e2e.browser import launch_chromium
from tests.e2e.live import ManagedProcess, embedded_server, free_port, wait_for_port
from tests.e2e.screenshots import DEFAULT_DIR

PASSWORD = "correct horse battery staple"
SETUP = """
from django.contrib.auth import get_user_model
from tenants import services
from tenants.secrets import secret_set
get_user_model().objects.create_superuser("staff", "staff@example.com", {password!r})
tenant = services.tenant_create(slug="acme", name="Acme", outbound_allowed_networks=["127.0.0.1/32"])
secret_set(tenant=tenant, name="shop", value="screenshot-only")
"""


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    out.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="screenshots-") as tmp:
        live = embedded_server(stack, Path(tmp))
        port = free_port()
        argv_api = [sys.executable, "-m", "uvicorn", "tests.tenants.openapi.rest_api:app", "--port", str(port)]
        api = ManagedProcess.start("shop-api", argv_api, {"PATH": "/usr/bin:/bin"}, Path(tmp))
        stack.callback(api.stop)
        wait_for_port(api, port)
        live.manage("shell", "-c", SETUP.format(password=PASSWORD))
        base = live.web_urls[0]
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(f"{base}/admin/login/")
                page.get_by_label("Username").fill("staff")
                page.get_by_label("Password").fill(PASSWORD)
                page.get_by_role("button", name="Log in").click()
                page.goto(f"{base}/admin/tenants/openapisource/import/")
                page.get_by_label("Tenant").select_option(label="acme")
                page.get_by_label("Document URL").fill(f"http://127.0.0.1:{port}/openapi.json")
                page.get_by_label("Prefix").fill("shop_")
                page.get_by_label("Secret:", exact=True).select_option("shop")
                page.get_by_role("button", name="Preview the operations").click()
                page.locator("#operations").wait_for()
                path = out / "openapi-import-preview.png"
                page.screenshot(path=str(path), full_page=True)
                print(path)
            finally:
                browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
