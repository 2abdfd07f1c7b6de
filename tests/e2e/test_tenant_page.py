"""The tenant's admin page in Debian's Chromium, as its owner sees it: every snippet runs as copied against the live
platform (the Python one with the official SDK, the TypeScript one with @modelcontextprotocol/sdk under Node, curl),
for a public tenant and for one that requires a token; and the page, its tool's schema editor and console, and the
landing page read well at 390 px and 1,400 px, light and dark (axe-core clean, no sideways scrolling, editors dark
in the dark theme)."""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser import axe_violations
from tests.e2e.live import PYTHON, LiveServer
from tests.e2e.tenant_admin_pages import TenantAdminScene, scene_create, sign_in
from tests.e2e.typescript_sdk import typescript_project

# Past the default: a platform to start (and, once, the TypeScript SDK to install) on a shared machine.
pytestmark = pytest.mark.timeout(300)

SNIPPET_TIMEOUT = 60.0

# Runs in ``manage.py shell -c``: a tenant that requires authorization, owned by the scene's owner, with one tool and
# a machine client whose credentials the token snippet uses. Prints its id, the client's id and secret.
PROTECTED_SCRIPT = """
from django.contrib.auth import get_user_model
from mcp_platform.oauth.machine_clients import machine_client_create
from tenants import services
tenant = services.tenant_create(slug={slug!r}, name="Acme vault", requires_authorization=True)
answer = {{"content": [{{"type": "text", "text": "open"}}]}}
services.tool_create(tenant=tenant, name="open_vault", description="Opens the vault.", config=answer)
services.membership_add(tenant=tenant, user=get_user_model().objects.get(username={owner!r}), role="owner")
client, secret = machine_client_create(tenant=tenant, name="Snippets", scopes=["mcp:tools"])
print(tenant.pk, client.client_id, secret)
"""


@dataclass(frozen=True)
class Protected:
    pk: int
    client_id: str
    client_secret: str


@pytest.fixture(scope="module")
def scene(live_platform: LiveServer) -> TenantAdminScene:
    return scene_create(live_platform)


@pytest.fixture(scope="module")
def protected(live_platform: LiveServer, scene: TenantAdminScene) -> Protected:
    script = PROTECTED_SCRIPT.format(slug=f"vault-{secrets.token_hex(3)}", owner=scene.owner)
    pk, client_id, client_secret = live_platform.manage("shell", "-c", script).split()[-3:]
    return Protected(int(pk), client_id, client_secret)


@pytest.fixture
def owner_page(chromium: Any, live_platform: LiveServer, scene: TenantAdminScene) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(15_000)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_platform.web_urls[0])
    page = context.new_page()
    sign_in(page, live_platform.web_urls[0], scene.owner)
    yield page
    context.close()


def snippets(page: Any, base: str, tenant: int) -> dict[str, str]:
    """The tenant page's snippets as the page shows them, by key (``snippet-<key>``)."""
    page.goto(f"{base}/admin/tenants/tenant/{tenant}/change/")
    found = page.locator("pre[id^='snippet-']")
    return {
        found.nth(i).get_attribute("id").removeprefix("snippet-"): found.nth(i).inner_text()
        for i in range(found.count())
    }


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(
            argv, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=SNIPPET_TIMEOUT
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{argv} did not finish in {SNIPPET_TIMEOUT} s:\n{exc.stdout!r}\n{exc.stderr!r}", pytrace=False)
    assert done.returncode == 0, f"{argv} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_python_snippet_runs_as_copied(
    owner_page: Any, live_platform: LiveServer, scene: TenantAdminScene, tmp_path: Path
) -> None:
    base = live_platform.web_urls[0]
    owner_page.goto(f"{base}/admin/tenants/tenant/{scene.ours}/change/")

    owner_page.get_by_role("button", name="Copy the Python SDK configuration").click()
    (tmp_path / "client.py").write_text(owner_page.evaluate("navigator.clipboard.readText()"))
    printed = run([str(PYTHON), "client.py"], tmp_path)

    assert printed.splitlines() == ["lookup_order - Find an order by its number.", "refund_order - Refund an order."]


def test_the_typescript_and_curl_snippets_run_as_copied(
    owner_page: Any, live_platform: LiveServer, scene: TenantAdminScene, tmp_path: Path
) -> None:
    shown = snippets(owner_page, live_platform.web_urls[0], scene.ours)
    project = typescript_project(tmp_path)

    (project / "client.mjs").write_text(shown["typescript"])
    from_node = run(["node", "client.mjs"], project)
    from_curl = run(["bash", "-c", shown["curl"]], tmp_path)

    assert from_node.splitlines() == ["lookup_order - Find an order by its number.", "refund_order - Refund an order."]
    assert '"name":"lookup_order"' in from_curl and '"name":"refund_order"' in from_curl


def test_a_protected_tenants_snippets_run_with_a_machine_clients_token(
    owner_page: Any, live_platform: LiveServer, protected: Protected, tmp_path: Path
) -> None:
    shown = snippets(owner_page, live_platform.web_urls[0], protected.pk)
    project = typescript_project(tmp_path)
    (project / "client.py").write_text(shown["python"])
    (project / "client.mjs").write_text(shown["typescript"])
    credentials = {"CLIENT_ID": protected.client_id, "CLIENT_SECRET": protected.client_secret, "MCP_TOKEN": ""}

    # As a person would: the token command first, then each client in the same terminal.
    script = "\n".join(
        ["set -e", shown["token"], f"{PYTHON} client.py", "node client.mjs", shown["curl"], "echo", 'echo "$MCP_TOKEN"']
    )
    printed = run(["bash", "-c", script], project, credentials).splitlines()
    without_token = subprocess.run(
        [str(PYTHON), "client.py"], cwd=project, env={**os.environ, "MCP_TOKEN": "not-a-token"}, capture_output=True
    )

    assert printed[:2] == ["open_vault - Opens the vault.", "open_vault - Opens the vault."]
    assert '"name":"open_vault"' in printed[2]
    assert printed[3] and protected.client_secret not in printed[3]
    assert without_token.returncode != 0  # the token is what lets them in


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1400])
def test_the_tenant_page_and_its_tools_pages_read_well(
    chromium: Any, live_platform: LiveServer, scene: TenantAdminScene, protected: Protected, width: int, scheme: str
) -> None:
    base = live_platform.web_urls[0]
    context = chromium.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    context.set_default_timeout(15_000)
    page = context.new_page()
    sign_in(page, base, scene.owner)
    found: dict[str, Any] = {}
    try:
        for name, path in (
            ("landing", "/"),
            ("tenant", f"/admin/tenants/tenant/{protected.pk}/change/"),
            ("tool", f"/admin/tenants/tool/{scene.our_tool}/change/"),
            ("console", f"/admin/tenants/tool/{scene.our_tool}/console/"),
        ):
            page.goto(base + path)
            found[name] = {
                "wider than the window": page.evaluate("document.documentElement.scrollWidth") > width,
                "axe": axe_violations(page),
            }
            if name == "tenant":
                copy = page.get_by_role("button", name="Copy the Python SDK configuration")
                styled = copy.evaluate("b => [getComputedStyle(b).borderRadius, getComputedStyle(b).backgroundColor]")
                found["copy button"] = styled
            if name == "tool":
                page.locator(".CodeMirror").first.wait_for()
                found["editor"] = page.locator(".CodeMirror").first.evaluate("e => getComputedStyle(e).backgroundColor")
    finally:
        context.close()

    clean = {"wider than the window": False, "axe": []}
    assert {name: found[name] for name in ("landing", "tenant", "tool", "console")} == {
        "landing": clean,
        "tenant": clean,
        "tool": clean,
        "console": clean,
    }
    assert found["copy button"][0] == "4px"  # the admin's button, not the browser's
    assert found["copy button"][1] not in ("rgba(0, 0, 0, 0)", "rgb(239, 239, 239)")
    assert found["editor"] == ("rgb(27, 27, 27)" if scheme == "dark" else "rgb(255, 255, 255)")
