"""Screenshots of the sign-in, consent and connected-apps pages for the docs (``scripts/screenshots``).

Runs the same path as the browser tests: a live embedded platform, a client registered through DCR, a
person who signs in and allows it, in Debian's Chromium. Usage: ``python -m tests.e2e.screenshots [DIR]``.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from tests.e2e.browser import OAuthClient, launch_chromium, oauth_client, sign_in, workspace_create
from tests.e2e.live import LiveServer, embedded_server

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
LOGO_URI = "https://assistant.example.com/logo.svg"
# A made-up app's logo, served in place of its web site (the machine that takes the pictures is offline).
LOGO_SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">
<rect width="64" height="64" rx="14" fill="#d97757"/>
<path d="M32 12l5 15 15 5-15 5-5 15-5-15-15-5 15-5z" fill="#fff"/></svg>"""

# Runs in ``manage.py shell -c``: a client a tenant administrator registered, bound to that tenant.
ADMIN_CLIENT_SCRIPT = """
from mcp_platform.oauth.models import TenantApplication
from tenants.models import Tenant
app = TenantApplication.objects.create(
    name={name!r}, tenant=Tenant.objects.get(slug={slug!r}), client_type="public",
    authorization_grant_type="authorization-code", redirect_uris={redirect_uri!r},
)
print(app.client_id)
"""


class Shots:
    """The screenshots one script takes, in order, into ``out``: ``shot(name)`` captures ``page`` whole (or its
    first screenful with ``full_page=False``), ``shot(name, target)`` another page, or a locator's own box."""

    def __init__(self, out: Path, page: Any) -> None:
        self.out = out
        self.page = page
        self.paths: list[Path] = []

    def __call__(self, name: str, target: Any = None, *, full_page: bool = True) -> None:
        path = self.out / f"{name}.png"
        if target is None or hasattr(target, "goto"):  # a page
            (target or self.page).screenshot(path=str(path), full_page=full_page)
        else:  # a locator
            target.screenshot(path=str(path))
        self.paths.append(path)


def serve_logo(route: Any) -> None:
    route.fulfill(status=200, content_type="image/svg+xml", body=LOGO_SVG)


def allow(page: Any, client: OAuthClient, resource: str) -> None:
    page.goto(client.authorize_url(resource))
    page.get_by_role("button", name="Allow").click()
    client.exchange(client.callback().params["code"], resource)


def take(live: LiveServer, browser: Any, out: Path) -> list[Path]:
    base = live.web_urls[0]
    research = workspace_create(live, name="Acme Research", slug="acme-research", username="alice")
    design = workspace_create(live, name="Design Studio", slug="design-studio", username="alice")
    context = browser.new_context(viewport={"width": 1024, "height": 760}, java_script_enabled=False)
    page = context.new_page()
    page.route("https://assistant.example.com/**", serve_logo)
    shot = Shots(out, page)

    with oauth_client(base, "Notebook Assistant") as assistant, oauth_client(base, "Acme Reports") as reports:
        assistant.register(logo_uri=LOGO_URI)
        page.goto(assistant.authorize_url(live.endpoint(research.slug)))
        page.get_by_label("Username").fill(research.username)
        shot("login")
        sign_in(page, research)
        shot("consent")
        page.get_by_role("button", name="Allow").click()
        assistant.exchange(assistant.callback().params["code"], live.endpoint(research.slug))
        assistant.state = "second"
        allow(page, assistant, live.endpoint(design.slug))

        script = ADMIN_CLIENT_SCRIPT.format(name="Acme Reports", slug=research.slug, redirect_uri=reports.redirect_uri)
        reports.client_id = live.manage("shell", "-c", script).split()[-1]  # after the shell's own banner
        page.goto(reports.authorize_url(live.endpoint(research.slug), scope="mcp:resources"))
        shot("consent-admin-client")
        page.get_by_role("button", name="Allow").click()
        reports.exchange(reports.callback().params["code"], live.endpoint(research.slug))

        page.goto(f"{base}/account/apps/")
        shot("connected-apps")

        phone = browser.new_context(viewport={"width": 390, "height": 844}, java_script_enabled=False)
        phone.add_cookies(context.cookies())
        small = phone.new_page()
        small.route("https://assistant.example.com/**", serve_logo)
        assistant.state = "phone"
        small.goto(assistant.authorize_url(live.endpoint(research.slug)))
        shot("consent-phone", small)
        phone.close()
    context.close()
    return shot.paths


def run(argv: list[str], take: Callable[[LiveServer, Any, Path], list[Path]]) -> int:
    """Take one script's screenshots (``take``) on an embedded server, into ``argv[1]`` or ``docs/screenshots``."""
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    out.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="screenshots-") as tmp:
        live = embedded_server(stack, Path(tmp))
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            try:
                for path in take(live, browser, out):
                    print(path)
            finally:
                browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv, take))
