"""People's own connections in Debian's Chromium: a person sees their accounts in tools on Connected apps, removes a
key and disconnects an upstream (the pages run no script); a tenant owner sees which members are connected to what and
disconnects one; an HTTP tool's form shows the fields of whom it acts as, and the upstream and OpenAPI import pages
offer them too; every page passes axe-core."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import PASSWORD, axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import sign_in as admin_sign_in

pytestmark = pytest.mark.browser

# Runs in ``manage.py shell -c``: a tenant with an owner and a member, a tool that takes each person's key, an
# upstream that acts as each person (disabled: nothing connects to it), and the member's key and connection.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from tenants import services
from tenants.connections import services as connections
from tenants.models import Upstream
users = get_user_model().objects
tenant = services.tenant_create(slug={slug!r}, name="Acme support", requires_authorization=True)
owner = users.create_user({owner!r}, {owner!r} + "@acme.example", {password!r})
services.membership_add(tenant=tenant, user=owner, role="owner")
member = users.create_user({member!r}, {member!r} + "@acme.example", {password!r})
services.membership_add(tenant=tenant, user=member)
auth = {{"type": "user_key", "placement": "header", "name": "X-Key", "label": "Weather API key"}}
weather = services.tool_create(
    tenant=tenant, name="weather", backend="http", config={{"url": "https://api.example/weather", "auth": auth}}
)
github = Upstream.objects.create(
    tenant=tenant, name="github", url="https://mcp.github.example/mcp", auth={{"type": "user_oauth"}}, enabled=False
)
connections.credential_store_key(tenant_id=tenant.pk, user_id=member.pk, target=f"tool:{{weather.pk}}", key="sk-1")
oauth = connections.credential_store_oauth(
    tenant_id=tenant.pk, user_id=member.pk, target=f"upstream:{{github.pk}}", access_token="at-1",
    refresh_token="rt-1", expires_in=3600, scope="repo", issuer="https://as.example",
)
print(tenant.pk, github.pk, oauth.pk)
"""


@dataclass(frozen=True)
class ConnectionScene:
    tenant: int
    upstream: int
    connection: int
    owner: str
    member: str


@pytest.fixture
def scene(live_platform: LiveServer) -> ConnectionScene:
    suffix = secrets.token_hex(3)
    owner, member = f"olivia-{suffix}", f"alice-{suffix}"
    script = SETUP_SCRIPT.format(slug=f"acme-{suffix}", owner=owner, member=member, password=PASSWORD)
    tenant, upstream, connection = (int(v) for v in live_platform.manage("shell", "-c", script).split()[-3:])
    return ConnectionScene(tenant, upstream, connection, owner, member)


@pytest.fixture
def context(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    context.set_default_timeout(15_000)
    yield context
    context.close()


def test_a_person_removes_their_key_and_disconnects_an_upstream(
    context: Any, live_platform: LiveServer, scene: ConnectionScene
) -> None:
    # The page runs no script (its Content-Security-Policy allows none); the browser's is on for axe alone.
    page = context.new_page()
    page.goto(f"{live_platform.web_urls[0]}/account/login/?next=/account/apps/")
    page.get_by_label("Username").fill(scene.member)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    accounts = page.get_by_role("list", name="Your accounts in tools")
    expect(accounts.get_by_role("listitem")).to_have_count(2)
    key = accounts.get_by_role("listitem").filter(has=page.get_by_role("heading", name="Tool weather"))
    expect(key).to_contain_text("Personal key")
    expect(key).to_contain_text("on Acme support")
    assert axe_violations(page) == []

    key.get_by_role("button", name="Remove your key for tool weather on Acme support").click()
    expect(page.get_by_role("status")).to_contain_text("Your key for tool weather on Acme support is removed.")
    page.get_by_role("button", name="Disconnect your account for upstream github on Acme support").click()
    expect(page.get_by_role("status")).to_contain_text("The upstream did not confirm a revocation")
    expect(page.get_by_text("No accounts yet.")).to_be_visible()
    assert axe_violations(page) == []


def test_an_owner_sees_who_is_connected_to_what_and_disconnects_a_member(
    context: Any, live_platform: LiveServer, scene: ConnectionScene
) -> None:
    base = live_platform.web_urls[0]
    page = context.new_page()
    admin_sign_in(page, base, scene.owner)

    page.goto(f"{base}/admin/tenants/personalcredential/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text(f"{scene.member} ({scene.member}@acme.example)")
    assert axe_violations(page) == []
    page.get_by_role("link", name="upstream github", exact=True).first.click()  # the "for" filter
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("OAuth connection")

    page.goto(f"{base}/admin/tenants/personalcredential/{scene.connection}/change/")
    expect(page.get_by_role("button", name="Save", exact=True)).to_have_count(0)
    assert axe_violations(page) == []
    page.get_by_role("button", name="Disconnect").click()
    expect(page.locator(".messagelist")).to_contain_text(f"Disconnected {scene.member}")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("tool weather")


def test_a_tools_form_shows_the_fields_of_whom_it_acts_as(
    context: Any, live_platform: LiveServer, scene: ConnectionScene
) -> None:
    base = live_platform.web_urls[0]
    page = context.new_page()
    admin_sign_in(page, base, scene.owner)
    page.goto(f"{base}/admin/tenants/tool/add/?tenant={scene.tenant}")
    page.get_by_label("Backend:").select_option(label="HTTP request")
    key_label, issuer = page.get_by_label("What the key is called:"), page.get_by_label("Authorization server")
    shared, machine = page.get_by_label("Authentication:"), page.get_by_label("Machine clients:")

    expect(shared).to_be_visible()
    expect(key_label).to_be_hidden()
    expect(machine).to_be_hidden()
    page.get_by_label("Acts as:").select_option(label="Each person: own API key")
    expect(key_label).to_be_visible()
    expect(issuer).to_be_hidden()
    expect(shared).to_be_hidden()  # machine clients are refused: no shared credentials
    machine.select_option(label="Use the tenant's shared credentials")
    expect(shared).to_be_visible()
    page.get_by_label("Acts as:").select_option(label="Each person: OAuth connection")
    expect(issuer).to_be_visible()
    expect(key_label).to_be_hidden()
    assert axe_violations(page) == []

    page.goto(f"{base}/admin/tenants/upstream/{scene.upstream}/change/")
    expect(page.get_by_label("Acts as:")).to_have_value("user_oauth")
    assert axe_violations(page) == []
    page.goto(f"{base}/admin/tenants/openapisource/import/?tenant={scene.tenant}")
    expect(page.get_by_role("heading", name="Acts as")).to_be_visible()
    assert axe_violations(page) == []
