"""The README's walkthrough ("From the first account to a connected client") done as its ten steps say, in their
words: the platform started as step 1 starts it, the first account made by step 2's command, the tenant, the
invitation, the grant, the four tools, the secret and the upstream made in the admin in Debian's Chromium through
the paths, labels, choices and buttons the README names (the invited owner in a browser of their own, from the link
the mail printed on the server's output), and the README's client program run as written and in the handshake era,
printing what the README shows. A step whose words drift from the pages, or whose shown output from what runs,
fails here."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import PASSWORD
from tests.e2e.commands import CommandRunner
from tests.e2e.live import (
    MIGRATED,
    OWN_PLATFORM_LOGS_KEY,
    PYTHON,
    REPO,
    ManagedProcess,
    sqlite_database,
    start_web,
    wait_for_port,
)
from tests.loopback_http import LoopbackServer, loopback_server

# A platform of its own to start (and, when this test runs first, the migrated database to make) on a shared machine.
pytestmark = pytest.mark.timeout(300)

README = REPO / "README.md"
SECTION = "## From the first account to a connected client"
# Where the README's platform and REST API are; this test's are on other addresses, and only those are replaced.
README_BASE = "http://127.0.0.1:8000"
HTTPBIN = "https://httpbin.org"
# The second terminal of step 2, unattended: Django's createsuperuser reads these with --noinput.
SUPERUSER = {
    "DJANGO_SUPERUSER_USERNAME": "root",
    "DJANGO_SUPERUSER_EMAIL": "root@example.com",
    "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
}
OWNER, OWNER_EMAIL = "olivia", "olivia@acme.example"
API_TOKEN = "walkthrough-token-never-shown"
PROGRAM_SECONDS = 60
WAIT_MS = 20_000


# ---- the README's words -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One numbered step of the walkthrough: its prose on one line (code blocks left out) and its code blocks."""

    number: int
    prose: str
    blocks: tuple[tuple[str, str], ...]  # (language, text)

    def _says(self, pattern: str, words: str, shown: str) -> str:
        assert re.search(pattern, self.prose), f"step {self.number} no longer says {shown}"
        return words

    def bold(self, words: str) -> str:
        """``words``, which the step must write as **words** (a label or a button)."""
        return self._says(re.escape(f"**{words}**"), words, f"**{words}**")

    def italic(self, words: str) -> str:
        """``words``, which the step must write as *words* (a choice)."""
        return self._says(rf"(?<!\*)\*{re.escape(words)}\*(?!\*)", words, f"*{words}*")

    def code(self, words: str) -> str:
        """``words``, which the step must write as `words` (what is typed)."""
        return self._says(re.escape(f"`{words}`"), words, f"`{words}`")

    def block(self, language: str) -> str:
        (text,) = [text for lang, text in self.blocks if lang == language]
        return text

    def paths(self) -> list[list[str]]:
        """The admin paths the step follows (*Admin → Tenants → Tools → Add tool*), in its order."""
        return [path.split(" → ") for path in re.findall(r"(?<!\*)\*([^*]+ → [^*]+)\*(?!\*)", self.prose)]


def walkthrough(readme: str) -> dict[int, Step]:
    """The steps of the README's walkthrough by number."""
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    steps = {}
    for number, body in re.findall(r"^\*\*(\d+)\. (.*?)(?=^\*\*\d+\. |\Z)", section, re.M | re.S):
        blocks = tuple(re.findall(r"^```(\w*)\n(.*?)^```", body, re.M | re.S))
        prose = " ".join(re.sub(r"^```.*?^```", " ", body, flags=re.M | re.S).split())
        steps[int(number)] = Step(int(number), prose, blocks)
    assert sorted(steps) == list(range(1, 11)), "the walkthrough has ten numbered steps"
    return steps


def shown_output(block: str) -> tuple[list[str], list[str], list[str]]:
    """The tool names the README shows first and last (around its "…"), and the lines it shows after them."""
    listed, *lines = block.splitlines()
    first, last = listed.strip("[]").split(", …, ")
    return ast.literal_eval(f"[{first}]"), ast.literal_eval(f"[{last}]"), lines


# ---- the platform, the API, the admin ------------------------------------------------------------------------


@dataclass(frozen=True)
class Platform:
    base: str
    web: ManagedProcess
    commands: CommandRunner


@pytest.fixture
def steps() -> dict[int, Step]:
    return walkthrough(README.read_text())


@pytest.fixture
def platform(request: pytest.FixtureRequest, tmp_path: Path, steps: dict[int, Step]) -> Iterator[Platform]:
    """The platform as step 1 starts it: ``scripts/serve``'s commands on a fresh clone's embedded defaults (mail
    printed on the server's output, keys made in the var directory), with the environment the step sets."""
    *assignments, script = shlex.split(steps[1].block("sh"))
    assert script == "scripts/serve", steps[1].block("sh")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env.update({"MCP_VAR_DIR": str(tmp_path / "var"), "PYTHONUNBUFFERED": "1"})
    env.update(assignment.split("=", 1) for assignment in assignments)
    with ExitStack() as stack:
        sqlite_database(env, prepared_with=MIGRATED)  # what scripts/serve's migrate makes, made once per test run
        commands = CommandRunner({**env, **SUPERUSER})
        stack.callback(commands.stop)
        commands.check("load_demo_tenant", "--if-missing")  # as scripts/serve loads it
        web, base = start_web("web", env, tmp_path, "--no-migrate")
        stack.callback(web.stop)
        # Thrown away at the end: its graceful shutdown would wait out the upstream's open stream to itself.
        stack.callback(web.kill)
        request.node.stash[OWN_PLATFORM_LOGS_KEY] = web.tail
        wait_for_port(web, int(urlsplit(base).port or 0))
        yield Platform(base, web, commands)


@pytest.fixture
def api() -> Iterator[LoopbackServer]:
    """What stands in for httpbin.org: this machine reaches no internet."""
    with loopback_server() as server:
        yield server


def _label(label: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(label)}:?$")  # the admin writes "Slug:"


def field(page: Any, label: str) -> Any:
    """The form's own control labelled ``label`` (not a section of the form that bears the same name, nor a field of
    one of its rows, such as a content block's)."""
    return page.get_by_label(_label(label)).and_(page.locator(":is(input, select, textarea):not(.block-row *)"))


def labelled(page: Any, label: str) -> Any:
    """The form row of a field that is more than one control (text blocks, boxes to tick), by its label."""
    return page.locator("div.form-row").filter(has=page.locator("label", has_text=_label(label)))


def follow(page: Any, base: str, path: list[str]) -> None:
    """Follow an admin path as the README writes it: from the index, section X's model Y (or model Y anywhere on
    the index, when no section is named), then the link the path ends with."""
    page.goto(f"{base}/admin/")
    *section, model, link = [part for part in path if part != "Admin"]
    where = page.get_by_role("table", name=section[0], exact=True) if section else page
    where.get_by_role("rowheader", name=model, exact=True).get_by_role("link").click()
    page.get_by_role("link", name=link, exact=True).click()


def save(page: Any, step: Step) -> None:
    """Press the step's **Save**; the page must say it saved (a refusal fails with what the form said)."""
    page.get_by_role("button", name=step.bold("Save"), exact=True).click()
    expect(page.locator(".messagelist .success, .errornote").first).to_be_visible()
    refused = page.locator(".errornote, .errorlist").all_inner_texts()
    assert not refused, f"step {step.number}: {refused}"


def printed_link(web: ManagedProcess, address: str) -> str:
    """The link in the last e-mail to ``address`` that the console mail backend printed on the server's output."""
    mails = [mail for mail in web.stdout_path.read_text().split("-" * 79) if f"To: {address}" in mail]
    assert mails, f"no e-mail to {address} on the server's output"
    links = re.findall(r"http://\S+/account/invitation/[\w-]+/", mails[-1])
    assert links, mails[-1]
    return str(links[-1])


def stored(platform: Platform, tool: str) -> dict[str, Any]:
    script = (
        "import json; from tenants.models import Tool; "
        f"tool = Tool.objects.get(tenant__slug='acme', name={tool!r}); "
        "print(json.dumps({'config': tool.config, 'input_schema': tool.input_schema}))"
    )
    answer: dict[str, Any] = json.loads(platform.commands.check("shell", "-c", script).strip().splitlines()[-1])
    return answer


def run_programs(sources: dict[str, str], directory: Path) -> dict[str, list[str]]:
    """Run each of the README's client programs as a person would (a file, the project's Python), all at once;
    what each printed, by name."""
    running = {}
    for name, source in sources.items():
        program = directory / f"client_{name}.py"
        program.write_text(source)
        running[name] = subprocess.Popen(
            [str(PYTHON), str(program)], cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    printed = {}
    for name, process in running.items():
        try:
            stdout, stderr = process.communicate(timeout=PROGRAM_SECONDS)
        finally:
            process.kill()
        assert process.returncode == 0, f"the README's program ({name}) failed:\n{stdout}\n{stderr}"
        printed[name] = stdout.splitlines()
    return printed


def sign_in(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/admin/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/admin/")


# ---- the walkthrough ---------------------------------------------------------------------------------------------


def test_the_readme_walkthrough_ends_with_a_client_calling_four_kinds_of_tools(
    chromium: Any, platform: Platform, api: LoopbackServer, steps: dict[int, Step], tmp_path: Path
) -> None:
    base = platform.base
    s2, s3, s4, s5, s6, s7, s8, s9, s10 = (steps[n] for n in range(2, 11))
    program = s9.block("python").replace(README_BASE, base)
    (endpoint,) = re.findall(r'^URL = "(.+)"$', program, re.M)
    assert endpoint == f"{base}/t/acme/mcp", endpoint

    # 2. The first account, in a second terminal; then the superuser signs in.
    python, manage, *command = shlex.split(s2.block("sh"))
    assert (python, manage) == (".venv/bin/python", "manage.py"), s2.block("sh")
    platform.commands.check(*command, "--noinput")
    assert f"{README_BASE}/admin/" in s2.prose
    root = chromium.new_context(viewport={"width": 1400, "height": 900}).new_page()
    root.set_default_timeout(WAIT_MS)
    owner = chromium.new_context(viewport={"width": 1400, "height": 900}).new_page()
    owner.set_default_timeout(WAIT_MS)
    try:
        sign_in(root, base, SUPERUSER["DJANGO_SUPERUSER_USERNAME"])

        # 3. A tenant.
        follow(root, base, s3.paths()[0])
        field(root, s3.bold("Slug")).fill(s3.code("acme"))
        field(root, s3.bold("Name")).fill(s3.code("Acme"))
        expect(field(root, s3.bold("Requires authorization"))).not_to_be_checked()
        save(root, s3)

        # 4. Its owner, invited by e-mail; the link is printed where the server runs, and opened in another browser.
        follow(root, base, s4.paths()[0])
        field(root, s4.bold("Tenant")).select_option(label=s4.code("acme"))
        field(root, s4.bold("E-mail")).fill(OWNER_EMAIL)
        field(root, s4.bold("Role")).select_option(label=s4.italic("Owner"))
        save(root, s4)
        owner.goto(printed_link(platform.web, OWNER_EMAIL))
        owner.get_by_label("Username").fill(OWNER)
        owner.get_by_label("Password", exact=True).fill(PASSWORD)
        owner.get_by_label("Password again").fill(PASSWORD)
        owner.get_by_role("button", name="Create account and accept").click()
        owner.wait_for_url(f"{base}/admin/")
        yours = owner.locator("#your-tenants")
        expect(yours.get_by_role("link", name="Acme", exact=True)).to_be_visible()
        expect(yours.get_by_role("link", name=re.compile(f"^{s4.bold('Invite someone')}"))).to_be_visible()
        assert "Demo" not in owner.content()
        owner.goto(f"{base}/admin/tenants/tenant/")
        expect(owner.locator("#result_list tbody tr")).to_have_count(1)
        expect(owner.locator("#result_list tbody tr")).to_contain_text("acme")

        # 5. A static tool, run in the console. The tenant is already chosen: the owner administers one.
        follow(owner, base, s5.paths()[0])
        field(owner, s5.bold("Name")).fill(s5.code("hello"))
        field(owner, s5.bold("Backend")).select_option(label=s5.italic("Static"))
        block = labelled(owner, s5.bold("Content")).get_by_role("group", name=s5.bold("Block 1"))
        block.get_by_label("Kind").select_option(label=s5.italic("Text"))
        block.get_by_label(s5.bold("Text"), exact=True).fill(s5.code("Hello from Acme!"))
        save(owner, s5)
        owner.locator("#result_list").get_by_role("link", name="hello", exact=True).click()
        owner.get_by_role("link", name=s5.bold("Run in the console")).click()
        owner.get_by_role("button", name="Run", exact=True).click()
        expect(owner.locator("#console-content")).to_have_text("Hello from Acme!")

        # 6. A Python tool: the superuser grants the function, the owner binds it.
        grant, python_tool = s6.paths()
        follow(root, base, grant)
        field(root, s6.bold("Tenant")).select_option(label=s6.code("acme"))
        function = s6.code("demo.count_slowly")
        choices = labelled(root, s6.bold("Python functions"))
        choices.get_by_label(re.compile(rf"^\s*{re.escape(function)}\(")).check()
        save(root, s6)
        follow(owner, base, python_tool)
        field(owner, s6.bold("Backend")).select_option(label=s6.italic("Python function"))
        field(owner, s6.bold("Python function")).select_option(function)
        expect(owner.locator(f'[data-python-function="{function}"]')).to_contain_text("steps")
        field(owner, s6.bold("Name")).fill(s6.code("count_slowly"))
        field(owner, s6.bold("Task support")).select_option(label=s6.italic("When the client accepts tasks"))
        save(owner, s6)
        schema = stored(platform, "count_slowly")["input_schema"]
        assert (sorted(schema["properties"]), schema.get("required", [])) == (["delay_ms", "steps"], [])
        assert {s6.code("steps"), s6.code("delay_ms")} == set(schema["properties"])

        # 7. An HTTP tool with a secret; the API it calls is this machine's stand-in for httpbin.org.
        secret, http_tool = s7.paths()
        follow(owner, base, secret)
        field(owner, s7.bold("Name")).fill(s7.code("api-token"))
        field(owner, s7.bold("Value")).fill(API_TOKEN)
        save(owner, s7)
        follow(owner, base, http_tool)
        field(owner, s7.bold("Name")).fill(s7.code("whoami"))
        field(owner, s7.bold("Backend")).select_option(label=s7.italic("HTTP request"))
        field(owner, s7.bold("Method")).select_option(s7.code("GET"))
        field(owner, s7.bold("URL template")).fill(s7.code(f"{HTTPBIN}/bearer").replace(HTTPBIN, api.base))
        field(owner, s7.bold("Authentication")).select_option(label=s7.italic("Bearer token"))
        field(owner, s7.bold("Secret")).select_option(s7.code("api-token"))
        save(owner, s7)
        assert stored(platform, "whoami")["config"] == json.loads(s7.block("json").replace(HTTPBIN, api.base))

        # 8. An upstream MCP server: the platform's own demo tenant.
        follow(owner, base, s8.paths()[0])
        field(owner, s8.bold("Name")).fill(s8.code("demo"))
        upstream = s8.code(f"{README_BASE}/t/demo/mcp")
        field(owner, s8.bold("URL")).fill(upstream.replace(README_BASE, base))
        save(owner, s8)
        owner.locator("#result_list").get_by_role("link", name="demo", exact=True).click()
        expect(owner.get_by_role("button", name=s8.bold("Refresh now"))).to_be_visible()
        expect(owner.get_by_role("button", name=s8.bold("Test the connection"))).to_be_visible()

        # 9. The tenant's page shows the endpoint the program connects to.
        follow(owner, base, s9.paths()[0])
        expect(owner.locator("#tenant-endpoint")).to_have_text(endpoint)
    finally:
        root.context.close()
        owner.context.close()

    # 9 and 10. The README's program, as written (2026-07-28) and in the handshake era, prints what the README shows.
    legacy_client = s10.code('Client(URL, mode="legacy")')
    assert program.count("Client(URL)") == 1
    first, last, lines = shown_output(s9.block(""))
    eras = {"2026-07-28": program, "handshake": program.replace("Client(URL)", legacy_client)}
    for era, printed in run_programs(eras, tmp_path).items():
        listed = ast.literal_eval(printed[0])
        assert listed[: len(first)] == first and listed[-len(last) :] == last, (era, listed)
        assert [line.rstrip() for line in printed[1:]] == lines, era
        assert API_TOKEN not in "\n".join(printed)
