"""The OAuth pages in a real browser: sign in, consent (Allow and Deny), connected apps and revocation.

Debian's Chromium through Playwright against the live platform (production topology when configured).
The person's pages run with JavaScript switched off: nothing they do may need it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.browser import (
    HTTP_TIMEOUT,
    OAuthClient,
    Workspace,
    axe_violations,
    mcp_status,
    oauth_client,
    png,
    sign_in,
    workspace_create,
)
from tests.e2e.live import LiveServer

pytestmark = pytest.mark.browser

SCOPE_WORDS = (
    "See and run this workspace's tools",
    "Read this workspace's resources",
    "Use this workspace's prompts",
)
LOGO_HOST = "https://logos.example.test"


@pytest.fixture
def workspace(live_platform: LiveServer) -> Workspace:
    return workspace_create(live_platform, name="Acme Research")


@pytest.fixture
def client(live_platform: LiveServer) -> Iterator[OAuthClient]:
    with oauth_client(live_platform.web_urls[0], "Claude") as client:
        client.register()
        yield client


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A fresh browser profile with JavaScript off."""
    context = chromium.new_context(java_script_enabled=False, viewport={"width": 1100, "height": 900})
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


@pytest.fixture
def scripted_page(chromium: Any) -> Iterator[Any]:
    """A fresh browser profile with JavaScript on, for checks that evaluate in the page (focus, images)."""
    context = chromium.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def endpoint(live: LiveServer, workspace: Workspace) -> str:
    return live.endpoint(workspace.slug)


def allow(page: Any, client: OAuthClient, workspace: Workspace, resource: str) -> dict[str, Any]:
    """Sign in, press Allow, exchange the code: the client's tokens."""
    page.goto(client.authorize_url(resource))
    sign_in(page, workspace)
    page.get_by_role("button", name="Allow").click()
    callback = client.callback()
    return client.exchange(callback.params["code"], resource)


# ---- consent ------------------------------------------------------------------------------------------


def test_person_signs_in_allows_and_the_client_gets_code_and_iss(live_platform, workspace, client, page):
    resource = endpoint(live_platform, workspace)
    page.goto(client.authorize_url(resource))

    expect(page).to_have_url(re.compile(r"/account/login/\?next="))
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    expect(page.get_by_text("to continue to Claude")).to_be_visible()
    sign_in(page, workspace)

    expect(page.get_by_role("heading", level=1)).to_have_text(f"Claude wants to access {workspace.name}")
    facts = page.locator("dl.facts")
    expect(facts).to_contain_text(resource)
    expect(facts).to_contain_text("Registered itself automatically (dynamic registration)")
    expect(facts.locator(".host")).to_have_text(client.redirect_uri.split("/")[2])
    expect(page.get_by_text("Unverified app")).to_be_visible()
    for words in SCOPE_WORDS:
        expect(page.get_by_role("listitem").filter(has_text=words)).to_be_visible()
    page.get_by_role("button", name="Allow").click()

    callback = client.callback()
    assert callback.params["state"] == client.state
    assert callback.params["iss"] == live_platform.web_urls[0]  # RFC 9207
    expect(page.get_by_role("heading", level=1)).to_have_text("You can close this window.")
    tokens = client.exchange(callback.params["code"], resource)
    assert set(tokens["scope"].split()) == {"mcp:tools", "mcp:resources", "mcp:prompts"}
    assert mcp_status(resource, tokens["access_token"]) == 200


def test_deny_sends_access_denied_to_the_client(live_platform, workspace, client, page):
    page.goto(client.authorize_url(endpoint(live_platform, workspace)))
    sign_in(page, workspace)
    page.get_by_role("button", name="Deny").click()

    callback = client.callback()
    assert callback.params["error"] == "access_denied"
    assert callback.params["state"] == client.state
    assert "code" not in callback.params


def test_a_person_outside_the_workspace_is_told_so_and_nothing_reaches_the_client(live_platform, client, page):
    member_elsewhere = workspace_create(live_platform, name="Elsewhere")
    closed = workspace_create(live_platform, name="Closed Lab")
    page.goto(client.authorize_url(endpoint(live_platform, closed)))
    sign_in(page, member_elsewhere)

    expect(page.get_by_role("heading", level=1)).to_have_text("Claude cannot be connected")
    expect(page.get_by_role("alert")).to_have_text("Your account is not a member of Closed Lab.")
    assert client.listener.arrivals.empty()


def test_the_logo_is_shown_without_a_referrer_and_within_its_box(live_platform, workspace, scripted_page):
    page = scripted_page
    seen: list[dict[str, str]] = []

    def logo_host(route: Any) -> None:  # stands in for the client's web site: this machine has no internet
        seen.append(route.request.all_headers())
        route.fulfill(status=200, content_type="image/png", body=png(512, 512, (217, 119, 87)))

    page.route(f"{LOGO_HOST}/**", logo_host)
    with oauth_client(live_platform.web_urls[0], "Claude") as client:
        registered = client.register(logo_uri=f"{LOGO_HOST}/claude.png")
        assert registered["logo_uri"] == f"{LOGO_HOST}/claude.png"
        page.goto(client.authorize_url(endpoint(live_platform, workspace)))
        sign_in(page, workspace)

    logo = page.locator("img.app-mark__logo")
    expect(logo).to_have_attribute("referrerpolicy", "no-referrer")
    expect(logo).to_have_attribute("alt", "")
    page.wait_for_function("img => img.complete && img.naturalWidth === 512", arg=logo.element_handle())
    box = logo.bounding_box()
    assert box is not None and (box["width"], box["height"]) == (64, 64)
    assert seen and all("referer" not in headers for headers in seen)


def test_an_insecure_logo_is_not_kept_and_the_initial_shows(live_platform, workspace, page):
    with oauth_client(live_platform.web_urls[0], "cursor") as client:
        registered = client.register(logo_uri="http://insecure.example.test/logo.png")
        assert "logo_uri" not in registered
        page.goto(client.authorize_url(endpoint(live_platform, workspace)))
        sign_in(page, workspace)
    expect(page.locator("img")).to_have_count(0)
    expect(page.locator(".consent__marks .app-mark__initial").first).to_have_text("C")


# ---- connected apps ----------------------------------------------------------------------------------


def test_connected_apps_lists_the_access_and_revoke_makes_the_tenant_refuse_the_token(
    live_platform, workspace, client, page
):
    resource = endpoint(live_platform, workspace)
    tokens = allow(page, client, workspace, resource)
    assert mcp_status(resource, tokens["access_token"]) == 200

    # On the last web process: in the production topology that is another process than the one that issued.
    page.goto(f"{live_platform.web_urls[-1]}/account/apps/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Connected apps")
    card = page.get_by_role("listitem").filter(has=page.get_by_role("heading", name="Claude"))
    expect(card).to_have_count(1)
    expect(card).to_contain_text(f"on {workspace.name}")
    expect(card).to_contain_text(resource)
    for words in SCOPE_WORDS:
        expect(card).to_contain_text(words)
    expect(card.locator("dt", has_text="Authorized").locator("xpath=following-sibling::dd/time")).to_have_count(1)
    last_used = card.locator("dt", has_text="Last used").locator("xpath=following-sibling::dd")
    expect(last_used).to_have_text(re.compile(r"^(now|an?\s(second|minute)\sago|\d+\s(seconds|minutes)\sago)$"))

    card.get_by_role("button", name=f"Revoke Claude's access to {workspace.name}").click()
    expect(page.get_by_role("status")).to_contain_text("Access revoked")
    expect(page.get_by_role("heading", name="No apps are connected")).to_be_visible()

    assert mcp_status(resource, tokens["access_token"]) == 401
    refused = client.refresh(tokens["refresh_token"], resource)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"


def test_revoking_one_workspace_leaves_the_apps_access_to_another(live_platform, client, page):
    first = workspace_create(live_platform, name="First Floor")
    second_slug = f"{first.slug}-b"
    second = workspace_create(live_platform, name="Second Floor", slug=second_slug, username=first.username)
    tokens_first = allow(page, client, first, endpoint(live_platform, first))
    client.state = "second"
    page.goto(client.authorize_url(endpoint(live_platform, second)))
    page.get_by_role("button", name="Allow").click()
    tokens_second = client.exchange(client.callback().params["code"], endpoint(live_platform, second))

    page.goto(f"{live_platform.web_urls[0]}/account/apps/")
    page.get_by_role("button", name="Revoke Claude's access to First Floor").click()
    expect(page.get_by_role("status")).to_contain_text("Access revoked")
    expect(page.get_by_role("button", name="Revoke Claude's access to Second Floor")).to_be_visible()
    assert mcp_status(endpoint(live_platform, first), tokens_first["access_token"]) == 401
    assert mcp_status(endpoint(live_platform, second), tokens_second["access_token"]) == 200


# ---- keyboard, headers, styles -----------------------------------------------------------------------


def focused(page: Any) -> str:
    """The focused element as ``tag#id "name"``, for asserting a Tab order."""
    script = """() => {
        const e = document.activeElement;
        const name = (e.getAttribute('aria-label') || e.textContent).trim();
        return `${e.tagName.toLowerCase()}#${e.id} "${name}"`;
    }"""
    return str(page.evaluate(script))


def tab_to(page: Any, name: str, limit: int = 25) -> list[str]:
    """Press Tab until the focused element's name is ``name``; the elements passed on the way."""
    path = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        path.append(focused(page))
        if path[-1].endswith(f'"{name}"'):
            return path
    raise AssertionError(f"{name!r} was not reached with Tab; focus went {path}")


def focus_ring(page: Any) -> tuple[str, float]:
    style = page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement); return [s.outlineStyle, s.outlineWidth]; }"
    )
    return style[0], float(style[1].removesuffix("px"))


def test_the_whole_flow_works_with_the_keyboard_alone(live_platform, workspace, client, scripted_page):
    page = scripted_page
    resource = endpoint(live_platform, workspace)
    page.goto(client.authorize_url(resource))

    assert tab_to(page, "Skip to main content") == ['a# "Skip to main content"']
    assert focus_ring(page)[0] == "solid"
    assert tab_to(page, "")[-1] == 'input#id_username ""'
    page.keyboard.type(workspace.username)
    page.keyboard.press("Tab")
    assert focused(page) == 'input#id_password ""'
    page.keyboard.type(workspace.password)
    page.keyboard.press("Enter")

    expect(page.get_by_role("heading", level=1)).to_contain_text("wants to access")
    path = tab_to(page, "Allow")
    assert any(step.endswith('"Deny"') for step in path), path  # Deny is reachable, and comes first
    style, width = focus_ring(page)
    assert style == "solid" and width >= 2
    page.keyboard.press("Enter")
    tokens = client.exchange(client.callback().params["code"], resource)

    page.goto(f"{live_platform.web_urls[0]}/account/apps/")
    tab_to(page, f"Revoke Claude's access to {workspace.name}")
    assert focus_ring(page)[0] == "solid"
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_contain_text("Access revoked")
    assert mcp_status(resource, tokens["access_token"]) == 401


def test_pages_refuse_to_be_framed_by_another_site(live_platform, client, scripted_page):
    page = scripted_page
    login = f"{live_platform.web_urls[0]}/account/login/"
    response = httpx.get(login, timeout=HTTP_TIMEOUT)
    assert response.headers["x-frame-options"] == "DENY"
    policy = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    assert "<script" not in response.text

    client.serve_page("/own", '<!doctype html><html lang="en"><title>own</title><h1>Own page</h1>')
    framing = client.serve_page(
        "/frame",
        '<!doctype html><html lang="en"><title>x</title>'
        f'<iframe id="own" src="{client.origin}/own"></iframe><iframe id="ours" src="{login}"></iframe>',
    )
    page.goto(framing)  # waits for the load event, which waits for both frames
    expect(page.frame_locator("#own").get_by_role("heading", name="Own page")).to_be_visible()  # framing works
    ours = page.frame(name="ours")
    assert ours is not None and ours.url == "chrome-error://chromewebdata/"  # Chromium refused to render it


def test_the_stylesheet_is_served_and_applied(live_platform, page):
    stylesheet = httpx.get(f"{live_platform.web_urls[-1]}/static/platform.css", timeout=HTTP_TIMEOUT)
    assert stylesheet.status_code == 200
    assert stylesheet.headers["content-type"].startswith("text/css")
    page.goto(f"{live_platform.web_urls[-1]}/account/login/")
    expect(page.locator("body")).to_have_css("background-color", "rgb(243, 245, 249)")
    expect(page.get_by_role("button", name="Sign in")).to_have_css("background-color", "rgb(29, 78, 216)")


def test_every_page_passes_axe(live_platform, workspace, client, scripted_page):
    page = scripted_page
    resource = endpoint(live_platform, workspace)
    checked: dict[str, list[str]] = {}

    page.goto(client.authorize_url(resource))
    checked["sign-in"] = axe_violations(page)
    page.get_by_label("Username").fill(workspace.username)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    checked["sign-in, wrong password"] = axe_violations(page)
    sign_in(page, workspace)
    expect(page.get_by_role("button", name="Allow")).to_be_visible()
    checked["consent"] = axe_violations(page)
    page.get_by_role("button", name="Allow").click()
    client.exchange(client.callback().params["code"], resource)
    page.goto(f"{live_platform.web_urls[0]}/account/apps/")
    checked["connected apps"] = axe_violations(page)
    page.get_by_role("button", name=re.compile("^Revoke")).first.click()
    expect(page.get_by_role("status")).to_be_visible()
    checked["connected apps, none left"] = axe_violations(page)
    page.goto(client.authorize_url(endpoint(live_platform, workspace_create(live_platform, name="Closed"))))
    expect(page.get_by_role("alert")).to_be_visible()
    checked["refused"] = axe_violations(page)

    assert {name: found for name, found in checked.items() if found} == {}
