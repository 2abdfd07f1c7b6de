"""Pinned upstream definitions, end to end: a real SDK upstream process that holds its changes for approval changes a
tool's description and schema while clients of both eras are connected (a 2026-07-28 ``subscriptions/listen`` stream
and a handshake-era GET stream). The clients keep listing, and calling, the approved definition until the tenant's
owner approves the change in Debian's Chromium; then they hear ``list_changed`` and list the new one. With "withhold
on incompatible schema", a tool whose new schema requires a new argument leaves the list until decided, a new tool
waits, and a rejection keeps the approved tool and is not raised again. The review page passes axe-core in both
themes at 1,400 and 390 px."""

from __future__ import annotations

import concurrent.futures
import secrets
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client import Client
from playwright.sync_api import expect

from tests.e2e.browser import axe_violations
from tests.e2e.tenant_admin_pages import admin_page
from tests.e2e.test_upstream_watch import Heard, listening
from tests.e2e.upstreams import OwnedUpstream as Scene
from tests.e2e.upstreams import owned_upstream

# A platform, an upstream, two connected clients and a browser on a shared 2-core machine.
pytestmark = pytest.mark.timeout(300)

WIDE = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}
# What a client may wait, from the approval to its notification.
NOTICE_SECONDS = 5.0


def in_a_thread(run: Callable[[], Awaitable[None]]) -> None:
    """``await run()`` on a loop of its own (Playwright's runs in this thread)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(anyio.run, run).result(timeout=60)


def reshape(scene: Scene, name: str, description: str, **arguments: tuple[str, ...]) -> None:
    """The upstream's tool ``name`` takes a new description and schema (``arguments``: its required and optional)."""
    in_a_thread(partial(scene.upstream.reshape, name, description, **arguments))


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    with ExitStack() as stack:
        yield owned_upstream(stack, tmp_path_factory.mktemp("held-changes"), "--changes", "hold")


@pytest.fixture
def page(chromium: Any, scene: Scene) -> Iterator[Any]:
    with admin_page(chromium, scene.base, scene.owner, timeout_ms=20_000, viewport=WIDE) as page:
        yield page


@dataclass
class Connected:
    """The two clients of ``listening``, held open on a loop of their own (Playwright owns this thread's)."""

    portal: BlockingPortal
    client: Client
    heard: Heard

    def tools(self) -> dict[str, Any]:
        return {tool.name: tool for tool in self.portal.call(self.client.list_tools).tools}

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.portal.call(self.client.call_tool, name, arguments)

    def heard_any(self) -> bool:
        return self.heard.listen.is_set() or self.heard.get.is_set()

    def wait_for_both(self) -> None:
        """Until both clients heard a tool list change (bounded), then listen afresh."""
        self.portal.call(self.heard.both)
        self.portal.call(self._forget)

    async def _forget(self) -> None:
        self.heard.listen, self.heard.get = anyio.Event(), anyio.Event()


@contextmanager
def connected(scene: Scene) -> Iterator[Connected]:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(listening(scene.live, scene.slug)) as (client, heard),
    ):
        yield Connected(portal, client, heard)


def refresh_and_review(page: Any, scene: Scene, waiting: int) -> None:
    """Refresh the upstream now (the platform's own watch may have done so already: the same proposal is recorded
    once), then open its Review changes page from its link."""
    page.goto(scene.upstream_page)
    page.get_by_role("button", name="Refresh now").click()
    expect(page.locator(".messagelist")).to_contain_text("Refreshed up: 0 added")
    page.get_by_role("link", name=f"Review changes ({waiting})").click()


def test_clients_keep_the_approved_definition_until_an_admin_approves_the_change(page: Any, scene: Scene) -> None:
    with connected(scene) as clients:
        approved = clients.tools()["up_echo"]
        assert approved.description == "Say the text back."

        reshape(scene, "echo", "Say the text back, louder: pass volume.", required=("text",), optional=("volume",))
        refresh_and_review(page, scene, waiting=1)

        # Held: the clients list the approved definition, heard nothing, and calls go on with it.
        assert clients.tools()["up_echo"].input_schema == approved.input_schema
        assert clients.tools()["up_echo"].description == "Say the text back."
        assert not clients.heard_any()
        answer = clients.call("up_echo", {"text": "hi"})
        assert not answer.is_error and answer.content[0].text == "reshaped: text=hi, volume="

        change = page.locator("section.held-change").filter(has_text="echo")
        expect(change.get_by_role("heading")).to_have_text("echo: Changed definition")
        expect(change.locator("table", has_text="Description").locator("ins")).to_have_text(
            "back, louder: pass volume."
        )
        schema = change.locator("table", has_text="Input schema")
        expect(schema.locator("td.diff-ins", has_text='"volume"').first).to_be_visible()
        change.get_by_role("button", name="Approve echo").click()
        expect(page.locator(".messagelist")).to_contain_text("1 change(s) of upstream up approved: echo.")
        expect(page.locator("#held-changes-none")).to_be_visible()

        clients.wait_for_both()
        echo = clients.tools()["up_echo"]
        assert echo.description == "Say the text back, louder: pass volume."
        assert "volume" in echo.input_schema["properties"]

    page.goto(f"{scene.base}/admin/activity/activityrecord/?q=tools:echo")
    row = page.locator("#result_list tbody tr").filter(has_text="Approved")
    expect(row).to_contain_text("pending change: tools:echo of upstream up (changed definition)")
    expect(row).to_contain_text(scene.owner)


def test_an_incompatible_schema_is_withheld_a_new_tool_waits_and_a_rejection_is_not_raised_again(
    chromium: Any, page: Any, scene: Scene
) -> None:
    page.goto(scene.upstream_page)
    page.get_by_label("Withhold on incompatible schema").check()
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    fresh = f"fresh_{secrets.token_hex(3)}"

    with connected(scene) as clients:
        assert "up_fail" in clients.tools()
        reshape(scene, "fail", "Fails, now saying why.", required=("reason",))
        in_a_thread(partial(scene.upstream.grow, fresh))
        refresh_and_review(page, scene, waiting=2)

        clients.wait_for_both()  # up_fail left the list
        tools = clients.tools()
        assert "up_fail" not in tools, "its new schema requires an argument: withheld"
        assert f"up_{fresh}" not in tools, "a new tool waits for approval"
        with pytest.raises(Exception, match="Unknown tool: up_fail"):
            clients.call("up_fail", {})
        failing = page.locator("section.held-change").filter(has_text="Fails, now")
        expect(failing.locator(".held-change-breaks")).to_contain_text("'reason' is now required")
        expect(failing.locator(".held-change-withheld")).to_contain_text("Withheld")
        expect(page.locator("section.held-change").filter(has_text=fresh).get_by_role("heading")).to_have_text(
            f"{fresh}: New tool"
        )
        review = page.url
        for scheme in ("light", "dark"):
            with admin_page(
                chromium, scene.base, scene.owner, timeout_ms=20_000, viewport=WIDE, color_scheme=scheme
            ) as other:
                other.goto(review)
                for viewport in (WIDE, PHONE):
                    other.set_viewport_size(viewport)
                    assert axe_violations(other) == [], f"{scheme} at {viewport['width']} px"

        page.get_by_role("button", name="Reject all").click()
        expect(page.locator(".messagelist")).to_contain_text("2 change(s) of upstream up rejected")
        clients.wait_for_both()
        tools = clients.tools()
        assert tools["up_fail"].description == "Always fails." and f"up_{fresh}" not in tools

    # The same proposals, read again, raise nothing.
    refresh_and_review(page, scene, waiting=0)
    expect(page.locator("#held-changes-none")).to_be_visible()
