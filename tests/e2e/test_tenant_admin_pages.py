"""A tenant owner made only through a membership runs their tenant from /admin/ in Debian's Chromium: signs in,
sees only their tenant's rows, meets a 404 at another tenant's page, adds a member by username and by e-mail,
invites someone by e-mail who creates their account from the mailed link and lands in the admin, resends and
revokes pending invitations on the tenant page; the pages pass axe-core."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import PASSWORD, axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import TenantAdminScene, add_member, admin_page, mailed_link, scene_create


@pytest.fixture
def scene(live_platform: LiveServer) -> TenantAdminScene:
    return scene_create(live_platform)


@pytest.fixture
def page(chromium: Any, live_platform: LiveServer, scene: TenantAdminScene) -> Iterator[Any]:
    """The owner, signed in, in a fresh browser profile (the admin's own scripts on)."""
    with admin_page(
        chromium, live_platform.web_urls[0], scene.owner, timeout_ms=15_000, viewport={"width": 1200, "height": 900}
    ) as page:
        yield page


def test_an_owner_sees_only_their_tenants_rows(page: Any, live_platform: LiveServer, scene: TenantAdminScene) -> None:
    base = live_platform.web_urls[0]

    page.goto(f"{base}/admin/tenants/tool/")

    expect(page.get_by_role("link", name="lookup_order")).to_be_visible()
    expect(page.get_by_role("link", name="refund_order")).to_be_visible()
    assert "globex_invoice" not in page.content()
    assert "Globex billing" not in page.content()  # not even as a filter choice
    page.goto(f"{base}/admin/tenants/tenant/")
    expect(page.get_by_role("link", name=scene.ours_slug)).to_be_visible()
    assert "Globex billing" not in page.content()


def test_another_tenants_page_is_a_404(page: Any, live_platform: LiveServer, scene: TenantAdminScene) -> None:
    base = live_platform.web_urls[0]

    for path in (
        f"/admin/tenants/tool/{scene.their_tool}/change/",
        f"/admin/tenants/tool/{scene.their_tool}/delete/",
        f"/admin/tenants/tenant/{scene.theirs}/change/",
    ):
        response = page.goto(base + path)
        assert response is not None and response.status == 404, path

    response = page.goto(f"{base}/admin/tenants/tool/{scene.our_tool}/change/")
    assert response is not None and response.status == 200


def test_an_owner_adds_members_by_username_and_by_email(
    page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    base = live_platform.web_urls[0]

    add_member(page, base, scene, "no-such-person@example.com")
    expect(page.get_by_text("No single account has this username or e-mail address.")).to_be_visible()

    add_member(page, base, scene, scene.newcomer_email)
    expect(page.locator(".messagelist")).to_contain_text("was added successfully")
    expect(page.get_by_role("link", name=f"{scene.newcomer} in acme-")).to_be_visible()

    add_member(page, base, scene, scene.newcomer)
    expect(page.get_by_text("Already a member of this tenant")).to_be_visible()


def test_the_tenant_admin_pages_pass_axe(page: Any, live_platform: LiveServer, scene: TenantAdminScene) -> None:
    base = live_platform.web_urls[0]
    checked = {}
    for name, path in (
        ("index", "/admin/"),
        ("tools", "/admin/tenants/tool/"),
        ("add member", f"/admin/tenants/membership/add/?tenant={scene.ours}"),
        ("tenant", f"/admin/tenants/tenant/{scene.ours}/change/"),
    ):
        page.goto(base + path)
        checked[name] = axe_violations(page)

    assert checked == {name: [] for name in checked}


def test_the_tenant_page_gives_the_endpoint_to_copy(
    page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    base = live_platform.web_urls[0]
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)

    page.goto(f"{base}/admin/tenants/tenant/{scene.ours}/change/")
    endpoint = page.locator("#tenant-endpoint").inner_text()
    page.get_by_role("button", name="Copy", exact=True).click()

    assert endpoint == f"{base}/t/{scene.ours_slug}/mcp"
    expect(page.get_by_role("button", name="Copied", exact=True)).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == endpoint
    expect(page.get_by_role("link", name="Tools (2)")).to_be_visible()
    expect(page.get_by_role("row", name="Claude Code")).to_contain_text(
        f"claude mcp add --transport http {scene.ours_slug}"
    )


# Each page in both themes and both widths, two axe runs a page: (light, 390) and (dark, 1,400), then the other way.
LOOKS = (("light", 390), ("dark", 1400))


def fits(page: Any, width: int) -> bool:
    return bool(page.evaluate(f"document.documentElement.scrollWidth <= {width}"))


@pytest.mark.timeout(300)  # the live platform's start, when this test runs first, counts too
def test_an_owner_invites_by_email_and_the_invitee_runs_the_tenant(
    chromium: Any, page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    base = live_platform.web_urls[0]
    invitee, address = f"ines-{scene.ours_slug}", f"ines@{scene.ours_slug}.example"
    checked: dict[str, list[str]] = {}

    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{base}/admin/tenants/invitation/add/")
    expect(page.get_by_label("Tenant")).to_have_value(str(scene.ours))  # their only tenant, already chosen
    page.get_by_label("E-mail").fill(address)
    page.get_by_label("Role").select_option(label="Owner")
    checked["invite form"] = axe_violations(page)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("was added successfully")
    expect(page.get_by_role("row", name=address)).to_contain_text("Pending")
    link = mailed_link(live_platform, address)
    assert link.startswith(f"{base}/account/invitation/")

    context = chromium.new_context(viewport={"width": 390, "height": 844})
    context.set_default_timeout(15_000)
    guest = context.new_page()
    try:
        guest.goto(link)
        expect(guest.get_by_role("heading", name="Join Acme support")).to_be_visible()
        expect(guest.locator("#invited-email")).to_have_text(address)
        for scheme, width in LOOKS:
            guest.emulate_media(color_scheme=scheme)
            guest.set_viewport_size({"width": width, "height": 900})
            checked[f"invitation {scheme} {width}"] = axe_violations(guest)
            assert fits(guest, width), f"invitation page wider than {width} px"
        guest.get_by_label("Username").fill(invitee)
        guest.get_by_label("Password", exact=True).fill("short")
        guest.get_by_label("Password again").fill("short")
        guest.get_by_role("button", name="Create account and accept").click()
        expect(guest.get_by_text("This password is too short.")).to_be_visible()
        expect(guest.get_by_label("Username")).to_have_value(invitee)  # nothing typed is lost but the passwords
        guest.get_by_label("Password", exact=True).fill(PASSWORD)
        guest.get_by_label("Password again").fill(PASSWORD)
        guest.get_by_role("button", name="Create account and accept").click()

        guest.wait_for_url(f"{base}/admin/")
        expect(guest.locator(".messagelist")).to_contain_text("You joined Acme support as owner.")
        tenants = guest.locator("#your-tenants")
        expect(tenants.get_by_role("link", name="Acme support", exact=True)).to_be_visible()
        expect(tenants).to_contain_text("Owner")
        assert "Globex billing" not in guest.content()
        for scheme, width in reversed(LOOKS):
            guest.emulate_media(color_scheme=scheme)
            guest.set_viewport_size({"width": width, "height": 900})
            checked[f"index {scheme} {width}"] = axe_violations(guest)
            box = tenants.bounding_box()
            assert box is not None and box["x"] + box["width"] <= width, f"tenants wider than {width} px"

        guest.goto(f"{base}/admin/tenants/resource/add/")
        expect(guest.get_by_label("Tenant")).to_have_value(str(scene.ours))
        guest.goto(link)
        expect(guest.get_by_role("heading", name="This invitation was already accepted")).to_be_visible()
    finally:
        context.close()

    assert checked == {name: [] for name in checked}


# Runs in ``manage.py shell -c``: two invitations the owner sent (as the invitation page would).
INVITE_SCRIPT = """
from django.contrib.auth import get_user_model
from tenants import people
from tenants.models import Tenant
tenant = Tenant.objects.get(pk={tenant})
owner = get_user_model().objects.get(username={owner!r})
for address in {addresses!r}:
    people.invitation_create(tenant=tenant, email=address, role="member", by=owner, link_for=lambda token: token)
"""


def test_an_owner_resends_and_revokes_invitations_on_the_tenant_page(
    page: Any, live_platform: LiveServer, scene: TenantAdminScene
) -> None:
    base = live_platform.web_urls[0]
    first, second = (f"{name}@{scene.ours_slug}.example" for name in ("ivy", "ian"))
    live_platform.manage(
        "shell", "-c", INVITE_SCRIPT.format(tenant=scene.ours, owner=scene.owner, addresses=(first, second))
    )
    checked: dict[str, list[str]] = {}

    page.goto(f"{base}/admin/tenants/tenant/{scene.ours}/change/")
    pending = page.locator("#pending-invitations")
    expect(pending.get_by_role("row", name=first)).to_contain_text("Member")
    expect(pending.get_by_role("row", name=first)).to_contain_text(scene.owner)
    for scheme, width in (("light", 390), ("dark", 1400), ("dark", 390), ("light", 1400)):
        page.emulate_media(color_scheme=scheme)
        page.set_viewport_size({"width": width, "height": 900})
        pending.scroll_into_view_if_needed()
        checked[f"tenant page {scheme} {width}"] = axe_violations(page)
        assert fits(page, width), f"tenant page wider than {width} px"
    page.get_by_role("button", name=f"Resend the invitation of {first}").click()
    expect(page.locator(".messagelist")).to_contain_text("was sent less than a minute ago")
    page.get_by_role("button", name=f"Revoke the invitation of {second}").click()

    expect(page.locator(".messagelist")).to_contain_text(f"Revoked the invitation of {second}.")
    expect(pending.get_by_role("row", name=second)).to_have_count(0)
    expect(pending.get_by_role("row", name=first)).to_have_count(1)
    assert checked == {name: [] for name in checked}
