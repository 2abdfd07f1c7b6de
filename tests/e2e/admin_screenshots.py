"""Screenshots of the admin pages for HTTP tools and secrets, for the README (``scripts/screenshots`` runs it too).

A live embedded platform with a tenant, a secret and an HTTP tool, a superuser signed in to the admin, Debian's
Chromium. Usage: ``python -m tests.e2e.admin_screenshots [DIR]``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.e2e.live import LiveServer
from tests.e2e.screenshots import run

USERNAME, PASSWORD = "platform-admin", "correct horse battery staple"
SECRET_VALUE = "pk-live-4d2f-screenshot-value"

# Runs in ``manage.py shell -c``: the objects the pages show; prints the tool's and the secret's ids.
SETUP_SCRIPT = f"""
from django.contrib.auth import get_user_model
from tenants import services
from tenants.secrets import secret_set
get_user_model().objects.create_superuser({USERNAME!r}, "admin@example.com", {PASSWORD!r})
tenant = services.tenant_create(slug="petstore", name="Petstore", outbound_allowed_networks=["10.20.0.0/16"])
secret = secret_set(tenant=tenant, name="petstore-token", value={SECRET_VALUE!r})
tool = services.tool_create(
    tenant=tenant, name="get_pet", description="Find a pet by its id.", backend="http",
    input_schema={{
        "type": "object",
        "properties": {{"pet_id": {{"type": "integer"}}, "verbose": {{"type": "boolean"}}}},
        "required": ["pet_id"],
    }},
    config={{"method": "GET", "url": "https://api.petstore.example/pets/{{pet_id}}{{?verbose}}",
            "auth": {{"type": "bearer", "secret": "petstore-token"}}, "timeout": 10}},
    annotations={{"readOnlyHint": True}},
)
print(tool.pk, secret.pk, tenant.pk)
"""


def take(live: LiveServer, browser: Any, out: Path) -> list[Path]:
    base = live.web_urls[0]
    tool_id, secret_id, tenant_id = live.manage("shell", "-c", SETUP_SCRIPT).split()[-3:]
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(f"{base}/admin/login/")
    page.get_by_label("Username").fill(USERNAME)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    shots: list[Path] = []
    for name, path in (
        ("admin-secret", f"/admin/tenants/secret/{secret_id}/change/"),
        ("admin-http-tool", f"/admin/tenants/tool/{tool_id}/change/"),
        ("admin-tenant-outbound", f"/admin/tenants/tenant/{tenant_id}/change/"),
    ):
        page.goto(base + path)
        assert SECRET_VALUE not in page.content()
        target = out / f"{name}.png"
        page.screenshot(path=str(target), full_page=True)
        shots.append(target)
    context.close()
    return shots


if __name__ == "__main__":
    sys.exit(run(sys.argv, take))
