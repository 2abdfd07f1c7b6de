"""The tool console in Debian's Chromium, on the live platform, as a tenant admin made only by membership: an inline
tool's progress and question (answered in the page through the form built from its schema), a task run on the
worker, and an HTTP tool against a real REST API; the pages pass axe-core mid-run and finished."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import sign_in
from tests.e2e.tool_console_pages import ConsoleScene, run_until_asked, scene_create
from tests.e2e.upstreams import UpstreamServer, upstream_server
from tests.rest_api import RestApi, start_rest_api

# Runs in ``manage.py shell -c``: a tenant of the scene's admin that may reach loopback (staff-set), for an upstream.
UPSTREAM_TENANT_SCRIPT = """
from django.contrib.auth import get_user_model
from tenants import services
tenant = services.tenant_create(slug={slug!r}, name="Federated")
services.tenant_update(tenant=tenant, data={{"outbound_allowed_networks": ["127.0.0.1/32"]}})
services.membership_add(tenant=tenant, user=get_user_model().objects.get(username={admin!r}), role="admin")
"""


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestApi]:
    with ExitStack() as stack:
        yield start_rest_api(stack, tmp_path_factory.mktemp("rest-api"))


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamServer]:
    with ExitStack() as stack:
        yield upstream_server(stack, tmp_path_factory.mktemp("upstream"))


@pytest.fixture
def scene(live_platform: LiveServer, api: RestApi) -> ConsoleScene:
    return scene_create(live_platform, api.base)


@pytest.fixture
def page(chromium: Any, live_platform: LiveServer, scene: ConsoleScene) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    sign_in(page, live_platform.web_urls[0], scene.admin)
    yield page
    context.close()


def test_progress_and_a_question_answered_in_the_page(
    page: Any, live_platform: LiveServer, scene: ConsoleScene
) -> None:
    base = live_platform.web_urls[0]

    run_until_asked(page, base, scene)
    expect(page.locator("#console-progress")).to_have_attribute("value", "50")
    expect(page.get_by_role("region", name="The tool asks")).to_contain_text("Continue?")
    asking = axe_violations(page)
    page.get_by_label("ok").check()
    page.get_by_role("button", name="Submit").click()

    expect(page.get_by_role("status")).to_have_text("Finished.")
    expect(page.locator("#console-content")).to_have_text("Streaming complete: action=accept")
    expect(page.locator("#console-duration")).to_contain_text("Duration: ")
    expect(page.get_by_role("region", name="The tool asks")).to_have_count(0)
    assert asking == []
    assert axe_violations(page) == []


@pytest.mark.across_processes
def test_a_task_runs_on_the_worker_and_its_result_comes_back(
    page: Any, live_platform: LiveServer, scene: ConsoleScene
) -> None:
    page.goto(scene.console(live_platform.web_urls[0], scene.task_tool))

    page.get_by_label("seconds").fill("1")
    page.get_by_label("label").fill("pi")
    page.get_by_label("Run as a task").check()
    page.get_by_role("button", name="Run", exact=True).click()

    expect(page.get_by_role("status")).to_have_text("Finished.", timeout=30_000)
    expect(page.locator("#console-content")).to_have_text("Computed pi after 1 second(s)")
    expect(page.get_by_role("log")).to_contain_text("started as task")
    expect(page.locator("#console-duration")).to_contain_text("(task ")


@pytest.mark.across_processes
def test_a_running_task_is_cancelled_from_the_page(page: Any, live_platform: LiveServer, scene: ConsoleScene) -> None:
    page.goto(scene.console(live_platform.web_urls[0], scene.task_tool))

    page.get_by_label("seconds").fill("120")
    page.get_by_label("Run as a task").check()
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_role("log")).to_contain_text("started as task")
    page.get_by_role("button", name="Cancel the run").click()

    expect(page.get_by_role("status")).to_have_text("Cancelled.", timeout=30_000)


def test_an_http_tool_calls_the_api(page: Any, live_platform: LiveServer, scene: ConsoleScene) -> None:
    page.goto(scene.console(live_platform.web_urls[0], scene.http_tool))

    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_text("pet_id is required.")).to_be_visible()  # the form checks before anything runs
    page.get_by_label("pet_id").fill("7")
    page.get_by_role("button", name="Run", exact=True).click()

    expect(page.get_by_role("status")).to_have_text("Finished.")
    expect(page.locator("#console-content")).to_contain_text('"path":"/pets/7"')
    expect(page.locator("#console-progress-row")).to_be_hidden()  # it reported no progress
    assert axe_violations(page) == []


def test_an_upstream_tool_relays_progress_logs_and_a_question(
    page: Any, live_platform: LiveServer, scene: ConsoleScene, upstream: UpstreamServer
) -> None:
    slug = f"fed-{scene.admin}"
    live_platform.manage("shell", "-c", UPSTREAM_TENANT_SCRIPT.format(slug=slug, admin=scene.admin))
    live_platform.manage("upstream_add", slug, "up", upstream.url)
    ids = live_platform.manage(
        "shell",
        "-c",
        "from tenants.models import Tool; "
        f"print(*(Tool.objects.get(tenant__slug={slug!r}, name=n).pk for n in ('up_slow_count', 'up_ask_name')))",
    )
    counting, asking = (int(v) for v in ids.split()[-2:])
    base = live_platform.web_urls[0]

    page.goto(scene.console(base, counting))
    page.get_by_label("steps").fill("2")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Finished.")
    expect(page.get_by_role("log")).to_contain_text("2 / 2 step 2")
    expect(page.get_by_role("log")).to_contain_text("counted 2")

    page.goto(scene.console(base, asking))
    page.get_by_label("label").fill("console")
    page.get_by_role("button", name="Run", exact=True).click()
    question = page.get_by_role("region", name="The tool asks")
    expect(question).to_contain_text("What is your name?")
    question.get_by_label("name").fill("Cora")
    question.get_by_role("button", name="Submit").click()
    expect(page.get_by_role("status")).to_have_text("Finished.")
    expect(page.locator("#console-content")).to_have_text("hello Cora")


def test_a_sampling_request_is_shown_and_answered_by_hand(
    page: Any, live_platform: LiveServer, scene: ConsoleScene
) -> None:
    page.goto(scene.console(live_platform.web_urls[0], scene.sampling_tool))
    page.get_by_label("prompt").fill("Name a colour")
    page.get_by_role("button", name="Run", exact=True).click()

    question = page.get_by_role("region", name="The tool asks for a model's completion")
    expect(question).to_contain_text("user: Name a colour")
    question.get_by_label("Reply as the model").fill("Teal")
    question.get_by_role("button", name="Send the reply").click()

    expect(page.get_by_role("status")).to_have_text("Finished.")
    expect(page.locator("#console-content")).to_have_text("LLM response: Teal")
