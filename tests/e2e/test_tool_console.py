"""The tool console in Debian's Chromium, on the live platform, as a tenant admin made only by membership: an inline
tool's progress and question (answered in the page through the form built from its schema, by button or Enter), a
task run on the worker, an HTTP tool against a real REST API, the admin's run history (opened again, run again), the
arguments as JSON, the raw JSON-RPC exchange, and a run copied as code and run; the pages pass axe-core mid-run and
finished, at 1,200 and 390 px, light and dark."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from mcp_platform.console.codegen import CallToCopy, curl_command, python_code
from tests.e2e.browser import axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import admin_page, sign_in
from tests.e2e.tool_console_pages import ConsoleScene, run_until_asked, scene_create
from tests.e2e.typescript_sdk import typescript_project
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
    with admin_page(
        chromium, live_platform.web_urls[0], scene.admin, timeout_ms=15_000, viewport={"width": 1200, "height": 900}
    ) as page:
        yield page


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


def run_pet(page: Any, pet_id: str) -> None:
    page.get_by_label("pet_id").fill(pet_id)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Finished.")


def test_runs_are_kept_opened_again_and_run_again_with_their_raw_exchange(
    page: Any, live_platform: LiveServer, scene: ConsoleScene
) -> None:
    page.goto(scene.console(live_platform.web_urls[0], scene.http_tool))
    expect(page.get_by_text("You have not run this tool yet.")).to_be_visible()
    run_pet(page, "7")

    page.get_by_text("Raw JSON-RPC exchange").click()
    exchange = page.locator("#console-exchange > li")
    expect(exchange.first).to_contain_text("→ to the server")
    expect(exchange.first).to_contain_text('"method":"tools/call"')
    expect(exchange.first).to_contain_text('"arguments":{"pet_id":"7"}')
    expect(exchange.last).to_contain_text("← from the server")
    expect(exchange.last).to_contain_text("/pets/7")
    run_pet(page, "8")

    history = page.locator("#console-history-rows > tr")
    expect(history).to_have_count(2)
    expect(history.first).to_contain_text('{"pet_id":"8"}')  # newest first
    expect(history.nth(1)).to_contain_text("Finished")
    history.nth(1).get_by_role("button", name="Open").click()
    expect(page.get_by_role("status")).to_contain_text(re.compile(r"^Run of .+: Finished\.$"))
    expect(page.locator("#console-content")).to_contain_text('"path":"/pets/7"')
    expect(exchange.first).to_contain_text('"arguments":{"pet_id":"7"}')
    assert axe_violations(page) == []

    history.nth(1).get_by_role("button", name="Run again").click()
    expect(history).to_have_count(3)
    expect(page.get_by_role("status")).to_have_text("Finished.")
    expect(history.first).to_contain_text('{"pet_id":"7"}')
    expect(page.get_by_label("pet_id")).to_have_value("7")
    page.reload()  # kept on the server, not in the page
    expect(history).to_have_count(3)


def test_arguments_go_from_the_form_to_json_and_back_and_bad_json_loses_nothing(
    page: Any, live_platform: LiveServer, scene: ConsoleScene
) -> None:
    page.goto(scene.console(live_platform.web_urls[0], scene.http_tool))
    page.get_by_label("pet_id").fill("7")
    page.get_by_role("button", name="Edit as JSON").click()
    box = page.get_by_label("Arguments as JSON")
    assert json.loads(box.input_value()) == {"pet_id": "7"}

    box.fill('{"pet_id": "9", "note": "kept",')
    page.get_by_role("button", name="Edit as a form").click()
    expect(page.locator("#console-form-errors")).to_contain_text("The arguments are not valid JSON")
    expect(box).to_have_value('{"pet_id": "9", "note": "kept",')  # what was typed stays
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Not started.")  # nothing ran
    assert axe_violations(page) == []

    box.fill('{"pet_id": "9", "note": "kept"}')
    page.get_by_role("button", name="Edit as a form").click()
    expect(page.get_by_label("pet_id")).to_have_value("9")
    expect(page.locator("#console-form-errors")).to_be_hidden()
    page.get_by_role("button", name="Edit as JSON").click()
    assert json.loads(box.input_value()) == {"pet_id": "9", "note": "kept"}  # a key the form has no field for too
    page.get_by_role("button", name="Run", exact=True).click()

    expect(page.get_by_role("status")).to_have_text("Finished.")
    expect(page.locator("#console-content")).to_contain_text('"path":"/pets/9"')
    expect(page.locator("#console-history-rows > tr").first).to_contain_text('"note":"kept"')


def test_enter_answers_a_question(page: Any, live_platform: LiveServer, scene: ConsoleScene) -> None:
    base = live_platform.web_urls[0]
    page.goto(scene.console(base, scene.form_tool))
    message = page.get_by_role("textbox", name="message")
    message.fill("Who is there?")
    message.press("Enter")  # Enter runs the tool, too

    question = page.get_by_role("region", name="The tool asks")
    expect(question).to_contain_text("Who is there?")
    question.get_by_label("response").fill("Cora")
    question.get_by_label("response").press("Enter")
    expect(page.get_by_role("status")).to_have_text("Finished.")
    expect(page.locator("#console-content")).to_have_text('User response: action=accept, content={"response":"Cora"}')

    run_until_asked(page, base, scene)  # a checkbox's question: Enter on the box answers it as it stands
    page.get_by_label("ok").check()
    page.get_by_label("ok").press("Enter")
    expect(page.get_by_role("status")).to_have_text("Finished.")
    expect(page.locator("#console-content")).to_have_text("Streaming complete: action=accept")


def copied(page: Any, form: str) -> str:
    page.get_by_role("group", name="Copy this call as").get_by_role("button", name=form).click()
    page.get_by_role("button", name="Copy the code").click()
    expect(page.get_by_role("button", name="Copy the code")).to_have_text("Copied")
    return str(page.evaluate("navigator.clipboard.readText()"))


def test_a_run_copied_as_python_and_as_curl_runs_against_the_platform(
    chromium: Any, live_platform: LiveServer, scene: ConsoleScene, tmp_path: Path
) -> None:
    base = live_platform.web_urls[0]
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    context.set_default_timeout(15_000)
    page = context.new_page()
    sign_in(page, base, scene.admin)
    page.goto(scene.console(base, scene.http_tool))
    run_pet(page, "7")

    python = copied(page, "Python SDK")
    curl = copied(page, "curl")
    typescript = copied(page, "TypeScript SDK")
    context.close()

    script = tmp_path / "call.py"
    script.write_text(python)
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["isError"] is False and '"path":"/pets/7"' in result["content"][0]["text"]

    answered = subprocess.run(["bash", "-c", curl], capture_output=True, text=True, timeout=60, check=False)
    assert answered.returncode == 0, answered.stderr
    assert '"path":"/pets/7"' in answered.stdout.replace('\\"', '"')
    assert f'new URL("{base}/t/' in typescript and 'name: "get_pet"' in typescript
    typescript_project(tmp_path)
    (tmp_path / "call.mjs").write_text(typescript)
    node = subprocess.run(["node", "call.mjs"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert node.returncode == 0, node.stderr
    assert '"path":"/pets/7"' in json.loads(node.stdout)["content"][0]["text"]


def test_the_console_reads_at_390_px_in_the_dark_theme(
    page: Any, live_platform: LiveServer, scene: ConsoleScene
) -> None:
    page.emulate_media(color_scheme="dark")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(scene.console(live_platform.web_urls[0], scene.http_tool))
    run_pet(page, "7")
    page.get_by_text("Raw JSON-RPC exchange").click()
    page.get_by_role("button", name="Edit as JSON").click()

    assert page.evaluate("document.getElementById('content-main').scrollWidth") <= 390
    again = page.get_by_role("button", name="Run again").bounding_box()
    assert again is not None and again["x"] + again["width"] <= 390  # the history's rows fit, as blocks
    background = page.evaluate("getComputedStyle(document.getElementById('console-json')).backgroundColor")
    assert background not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)"), background
    assert axe_violations(page) == []


# Runs in ``manage.py shell -c``: a tenant that requires authorization, a tool, and a machine client's credentials.
SECURE_TENANT_SCRIPT = """
import json
from mcp_platform.oauth.machine_clients import machine_client_create
from tenants import services
tenant = services.tenant_create(slug={slug!r}, name="Locked shop", requires_authorization=True)
services.tool_create(tenant=tenant, name="greet", description="Greets.",
                     config={{"content": [{{"type": "text", "text": "hello"}}]}})
client, secret = machine_client_create(tenant=tenant, name="Console copy", scopes=["mcp:tools"])
print(json.dumps({{"client_id": client.client_id, "secret": secret}}))
"""


def test_code_for_a_tenant_that_requires_authorization_runs_with_a_token_from_the_environment(
    live_platform: LiveServer, tmp_path: Path
) -> None:
    slug = f"locked-{secrets.token_hex(3)}"
    output = live_platform.manage("shell", "-c", SECURE_TENANT_SCRIPT.format(slug=slug))
    credentials = json.loads(output.strip().splitlines()[-1])
    endpoint = live_platform.endpoint(slug)
    issued = httpx.post(
        f"{live_platform.web_urls[0]}/oauth/token/",
        data={"grant_type": "client_credentials", "resource": endpoint},
        auth=(credentials["client_id"], credentials["secret"]),
        timeout=15.0,
    )
    assert issued.status_code == 200, issued.text
    call = CallToCopy(endpoint=endpoint, tool="greet", arguments={"name": "Cora"}, needs_token=True)
    (tmp_path / "call.py").write_text(python_code(call))
    with_token = {**os.environ, "MCP_TOKEN": issued.json()["access_token"]}

    ran = subprocess.run(
        [sys.executable, "call.py"],
        cwd=tmp_path,
        env=with_token,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    answered = subprocess.run(
        ["bash", "-c", curl_command(call)], env=with_token, capture_output=True, text=True, timeout=60, check=False
    )
    refused = subprocess.run(
        ["bash", "-c", curl_command(call)],
        env={**with_token, "MCP_TOKEN": "wrong"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["content"] == [{"type": "text", "text": "hello"}]
    assert answered.returncode == 0 and '"text":"hello"' in answered.stdout, answered.stdout
    assert '"text":"hello"' not in refused.stdout  # the token is what let it in
