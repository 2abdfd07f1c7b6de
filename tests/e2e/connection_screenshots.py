"""Screenshots of tools that act as the person (issue 30) for the README: the connect page a call's link opens, the
page for a personal key, the person's Connected apps with their accounts in tools, and the tenant admin's list of
who is connected to what.

The real flow, as in the end-to-end tests of people's connections (``tests/e2e/personal_connections.py``): a second
platform instance requiring OAuth is the upstream (``tests/e2e/personal_upstreams.py``); the tenant's owner adds it
in the admin as acting for each person (OAuth, dynamic registration) and connects her own account from its page,
which reads its catalog; a member's official SDK client calls its tool, is asked to connect, and she does in
Chromium, then stores her key for an HTTP tool the same way. Usage: ``python -m tests.e2e.connection_screenshots
[DIR]``.
"""

from __future__ import annotations

import sys
import tempfile
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

import anyio
from playwright.async_api import async_playwright, expect

from tests.e2e.browser import PASSWORD, launch_chromium
from tests.e2e.live import LiveServer, embedded_server, in_tenant
from tests.e2e.oauth_person import Person
from tests.e2e.personal_connections import Member, Visitor, last_json, mcp_client, whoami
from tests.e2e.personal_upstreams import Account, PersonalUpstream, personal_upstreams
from tests.e2e.screenshots import DEFAULT_DIR
from tests.e2e.test_oauth_clients import native_app

SLUG, OWNER, MEMBER = "acme", "olivia", "alice"
UPSTREAM = "notes"
TOOL = f"{UPSTREAM}_whoami"
KEY_TOOL, KEY_LABEL = "forecast", "Weather API key"
APP_NAME = "Notebook Assistant"
DEADLINE_SECONDS = 300.0
WAIT_MS = 20_000
READ_CHECKS = 60
# The pages people see are shown as the OAuth pages' pictures are (tests/e2e/screenshots.py), the admin as the
# upstream pictures are (tests/e2e/upstream_screenshots.py): wide enough for every column of the list.
PEOPLE_VIEWPORT = {"width": 1024, "height": 760}
ADMIN_VIEWPORT = {"width": 1600, "height": 800}

# Runs in ``manage.py shell -c``: a protected tenant that may reach this machine, its owner and a member, and an
# HTTP tool that sends each person's own key (to the upstream instance's ``/healthz``, which answers any).
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from tenants import services
users = get_user_model().objects
tenant = services.tenant_create(slug={slug!r}, name="Acme", requires_authorization=True,
                                outbound_allowed_networks=["127.0.0.1/32"])
owner = users.create_user({owner!r}, {owner!r} + "@acme.example", {password!r})
services.membership_add(tenant=tenant, user=owner, role="owner")
member = users.create_user({member!r}, {member!r} + "@acme.example", {password!r})
services.membership_add(tenant=tenant, user=member)
auth = {{"type": "user_key", "placement": "header", "name": "X-Weather-Key", "label": {label!r}}}
services.tool_create(tenant=tenant, name={tool!r}, backend="http", description="Tomorrow's weather.",
                     input_schema={{"type": "object"}}, config={{"method": "GET", "url": {url!r}, "auth": auth}})
"""

# Runs in ``manage.py shell -c`` with the tenant bound: whether the upstream's catalog has been read.
READ_SCRIPT = "import json; print(json.dumps(tenant.tools.filter(name={tool!r}).exists()))"


class Shots:
    """``tests.e2e.screenshots.Shots`` for Playwright's async API: each page whole, or a locator's own box."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.paths: list[Path] = []

    async def __call__(self, name: str, target: Any) -> None:
        path = self.out / f"{name}.png"
        if hasattr(target, "goto"):  # a page
            await target.screenshot(path=str(path), full_page=True)
        else:
            await target.screenshot(path=str(path))
        self.paths.append(path)


async def sign_in(page: Any, account: Account, *, button: str = "Sign in") -> None:
    await page.get_by_label("Username").fill(account.username)
    await page.get_by_label("Password").fill(account.password)
    await page.get_by_role("button", name=button).click()


async def authorize_at_upstream(page: Any, account: Account) -> None:
    """From the connect page on: on to the upstream, signed in there as ``account``, allowed, and back."""
    await page.get_by_role("button", name="Continue to sign in").click()
    await expect(page.get_by_label("Username")).to_be_visible()
    await sign_in(page, account)
    await page.get_by_role("button", name="Allow").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Connected")


async def catalog_read(live: LiveServer) -> None:
    """Wait until the upstream's catalog is read (once its first member connected: a task of the worker's)."""
    for _ in range(READ_CHECKS):
        if last_json(await live.amanage("shell", "-c", in_tenant(SLUG, READ_SCRIPT.format(tool=TOOL)))):
            return
        await anyio.sleep(0.5)
    raise AssertionError(f"the catalog of {UPSTREAM} was not read after its first member connected")


async def take(live: LiveServer, upstream: PersonalUpstream, browser: Any, out: Path) -> list[Path]:
    base = live.web_urls[0]
    endpoint = live.endpoint(SLUG)
    script = SETUP_SCRIPT.format(
        slug=SLUG,
        owner=OWNER,
        member=MEMBER,
        password=PASSWORD,
        label=KEY_LABEL,
        tool=KEY_TOOL,
        url=f"{upstream.issuer}/healthz",
    )
    await live.amanage("shell", "-c", script)
    owner, member = Account(OWNER, PASSWORD), Account(MEMBER, PASSWORD)
    owner_there, member_there = await upstream.add_person(OWNER), await upstream.add_person(MEMBER)
    shot = Shots(out)

    # The owner adds the upstream as acting for each person and connects her own account from its page.
    admin = await browser.new_context(viewport=ADMIN_VIEWPORT, color_scheme="light")
    admin.set_default_timeout(WAIT_MS)
    page = await admin.new_page()
    await page.goto(f"{base}/admin/login/?next=/admin/")
    await sign_in(page, owner, button="Log in")
    await page.goto(f"{base}/admin/tenants/upstream/add/")
    await page.get_by_label("Name:", exact=True).fill(UPSTREAM)
    await page.get_by_label("URL:", exact=True).fill(upstream.mcp_url)
    await page.get_by_label("Acts as:").select_option(label="Each person: OAuth connection")
    await page.get_by_label("OAuth client:", exact=True).select_option(label="Dynamic registration")
    await page.get_by_role("button", name="Save", exact=True).click()
    await page.locator("#result_list").get_by_role("link", name=UPSTREAM, exact=True).click()
    await page.get_by_role("button", name="Connect my account").click()
    await authorize_at_upstream(page, owner_there)
    await catalog_read(live)

    # A member's client calls the upstream's tool, then the HTTP tool; each call asks her to connect, once.
    people = await browser.new_context(viewport=PEOPLE_VIEWPORT, color_scheme="light", java_script_enabled=False)
    people.set_default_timeout(WAIT_MS)
    mine = await people.new_page()

    async def connect(url: str) -> None:
        await mine.goto(url)
        await sign_in(mine, member)
        await expect(mine.get_by_role("heading", level=1)).to_contain_text("Connect your account to")
        await shot("connect-account", mine)
        await authorize_at_upstream(mine, member_there)

    async def add_key(url: str) -> None:
        await mine.goto(url)
        await expect(mine.get_by_role("heading", level=1)).to_contain_text(f"Add your {KEY_LABEL}")
        await shot("connect-key", mine)
        await mine.get_by_label(KEY_LABEL, exact=True).fill("wk-screenshot-only")
        await mine.get_by_role("button", name="Save key").click()
        await expect(mine.get_by_role("heading", level=1)).to_have_text("Key saved")

    async with AsyncExitStack() as stack:
        person = await stack.enter_async_context(Person(member.username, member.password))
        alice = Member(member, member_there, person)
        alice.apps[endpoint] = native_app(endpoint, person, client_name=APP_NAME)
        asking, asking_key = Visitor(connect), Visitor(add_key)
        async with mcp_client(endpoint, alice, elicitation_callback=asking) as client:
            acted_as = whoami(await client.call_tool(TOOL, {}))
        async with mcp_client(endpoint, alice, elicitation_callback=asking_key) as client:
            forecast = await client.call_tool(KEY_TOOL, {})
    assert acted_as["username"] == member_there.username, acted_as
    assert len(asking.asked) == len(asking_key.asked) == 1, (asking.asked, asking_key.asked)
    assert not forecast.is_error, forecast

    await mine.goto(f"{base}/account/apps/")
    await expect(mine.get_by_role("list", name="Your accounts in tools").get_by_role("listitem")).to_have_count(2)
    await shot("connected-accounts", mine)
    await people.close()

    # The owner's view of who is connected to what, the member's connection to the upstream chosen to disconnect.
    await page.goto(f"{base}/admin/tenants/personalcredential/")
    rows = page.locator("#result_list tbody tr")
    await expect(rows).to_have_count(3)
    chosen = rows.filter(has_text=f"{MEMBER} ({MEMBER}@acme.example)").filter(has_text=f"upstream {UPSTREAM}")
    await chosen.get_by_role("checkbox").check()
    await page.get_by_label("Action:").select_option(label="Disconnect the selected connections")
    await shot("admin-connections", page)
    await admin.close()
    return shot.paths


async def take_all(live: LiveServer, upstream: PersonalUpstream, out: Path) -> list[Path]:
    with anyio.fail_after(DEADLINE_SECONDS):
        async with async_playwright() as playwright:
            browser = await launch_chromium(playwright)
            try:
                return await take(live, upstream, browser, out)
            finally:
                await browser.close()


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    out.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="screenshots-") as tmp:
        (Path(tmp) / "platform").mkdir()
        upstream = stack.enter_context(personal_upstreams(Path(tmp) / "upstream"))
        live = embedded_server(stack, Path(tmp) / "platform")
        for path in anyio.run(take_all, live, upstream, out):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
