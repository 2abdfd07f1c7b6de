"""A tenant's named servers in the admin, in Debian's Chromium, as the tenant's owner: add one from the tenant page,
choose what it serves, see the preview and its configuration, and run its curl snippet against the live platform (it
lists the selection only); a protected tenant's server snippets get a machine client's token for that server. The
pages are axe-core clean, light and dark."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser import axe_violations
from tests.e2e.live import LiveServer
from tests.e2e.tenant_admin_pages import TenantAdminScene, admin_page, scene_create

pytestmark = pytest.mark.timeout(300)

# Runs in ``manage.py shell -c``: the scene's tenant gets a tagged tool; a protected tenant owned by the scene's owner
# has a server selecting one of its two tools, and a machine client. Prints the protected tenant's and server's ids,
# the client's id and secret.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from mcp_platform.oauth.machine_clients import machine_client_create
from tenants import services
from tenants.models import Tenant
from tenants.servers import server_create
answer = {{"content": [{{"type": "text", "text": "ok"}}]}}
ours = Tenant.objects.get(pk={ours})
status = "Where an order is."
services.tool_create(tenant=ours, name="order_status", description=status, config=answer, tags=["read-only"])
vault = services.tenant_create(slug={vault!r}, name="Acme vault", requires_authorization=True)
services.tool_create(tenant=vault, name="peek", description="Looks inside.", config=answer)
services.tool_create(tenant=vault, name="empty_vault", description="Empties it.", config=answer)
services.membership_add(tenant=vault, user=get_user_model().objects.get(username={owner!r}), role="owner")
server = server_create(tenant=vault, slug="peeker", title="Peeker", selection=["tools:peek"])
client, secret = machine_client_create(tenant=vault, name="Snippets", scopes=["mcp:tools"])
print(vault.pk, server.pk, client.client_id, secret)
"""


def run(script: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["bash", "-c", script], cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"{script} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def scene(live_platform: LiveServer) -> tuple[TenantAdminScene, list[str]]:
    scene = scene_create(live_platform)
    script = SETUP_SCRIPT.format(ours=scene.ours, vault=f"vault-{secrets.token_hex(3)}", owner=scene.owner)
    return scene, live_platform.manage("shell", "-c", script).split()[-4:]


def snippets(page: Any, prefix: str) -> dict[str, str]:
    found = page.locator(f"pre[id^='snippet-{prefix}']")
    return {
        found.nth(i).get_attribute("id").removeprefix(f"snippet-{prefix}"): found.nth(i).inner_text()
        for i in range(found.count())
    }


def test_an_owner_curates_a_server_and_its_snippet_lists_only_its_selection(
    chromium: Any, live_platform: LiveServer, scene: tuple[TenantAdminScene, list[str]], tmp_path: Path
) -> None:
    tenant, _ = scene
    base = live_platform.web_urls[0]
    with admin_page(chromium, base, tenant.owner, timeout_ms=15_000, viewport={"width": 1400, "height": 900}) as page:
        page.goto(f"{base}/admin/tenants/tenant/{tenant.ours}/change/")
        page.get_by_role("link", name="Add a server").click()
        page.get_by_label("Slug").fill("orders")
        page.get_by_label("Title").fill("Orders, read only")
        page.locator("input[name=tools][value=lookup_order]").check()
        page.locator("input[name=tags][value='read-only']").check()
        page.get_by_role("button", name="Save and continue editing").click()
        page.get_by_role("heading", name="Connect").wait_for()
        preview = page.locator(".server-preview").inner_text()
        shown = snippets(page, "server-orders-")
        listed = run(shown["curl"], tmp_path)

    assert "Tools (2)" in preview and "lookup_order, order_status" in preview
    assert f"/t/{tenant.ours_slug}/s/orders/mcp" in shown["curl"]
    assert '"name":"lookup_order"' in listed and '"name":"order_status"' in listed
    assert "refund_order" not in listed


def test_a_protected_servers_snippets_run_with_a_token_for_that_server(
    chromium: Any, live_platform: LiveServer, scene: tuple[TenantAdminScene, list[str]], tmp_path: Path
) -> None:
    tenant, (_, server, client_id, client_secret) = scene
    base = live_platform.web_urls[0]
    with admin_page(chromium, base, tenant.owner, viewport={"width": 1400, "height": 900}) as page:
        page.goto(f"{base}/admin/tenants/server/{server}/change/")
        shown = snippets(page, "server-peeker-")
    credentials = {"CLIENT_ID": client_id, "CLIENT_SECRET": client_secret, "MCP_TOKEN": ""}
    listed = run("\n".join(["set -e", shown["token"], shown["curl"]]), tmp_path, credentials)
    assert '"name":"peek"' in listed and "empty_vault" not in listed


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_server_pages_read_well(
    chromium: Any, live_platform: LiveServer, scene: tuple[TenantAdminScene, list[str]], scheme: str
) -> None:
    tenant, (vault, server, _, _) = scene
    base = live_platform.web_urls[0]
    found = {}
    with admin_page(
        chromium, base, tenant.owner, timeout_ms=15_000, viewport={"width": 1400, "height": 900}, color_scheme=scheme
    ) as page:
        for name, path in (
            ("server", f"/admin/tenants/server/{server}/change/"),
            ("add", f"/admin/tenants/server/add/?tenant={vault}"),
            ("tenant", f"/admin/tenants/tenant/{vault}/change/"),
        ):
            page.goto(base + path)
            if name == "tenant":
                page.locator("details.tenant-server summary").first.click()
            found[name] = axe_violations(page)
    assert found == {"server": [], "add": [], "tenant": []}
