"""A tenant owner's JSON Schema editor and live tool-run pages in Debian's Chromium: the set-up the browser tests and
the screenshots share, and the screenshots (``python -m tests.e2e.schema_and_run_pages [DIR]``; ``scripts/screenshots``
too). The owner is made only through a membership; the task is started by a real 2026-07-28 client request."""

from __future__ import annotations

import json
import re
import secrets
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.live import LiveServer
from tests.e2e.raw_http import stateless_headers, stateless_request
from tests.e2e.screenshots import Shots, run
from tests.e2e.tenant_admin_pages import TenantAdminScene, admin_page, scene_create

TASKS = "io.modelcontextprotocol/tasks"
COUNTER = "count_slowly"
COUNTER_SCHEMA = {
    "type": "object",
    "properties": {
        "steps": {"type": "integer", "title": "Steps", "minimum": 1, "maximum": 1000, "default": 5},
        "delay_ms": {"type": "integer", "title": "Pause between steps (ms)", "minimum": 0, "default": 500},
        "unit": {
            "title": "Unit",
            "oneOf": [{"const": "items", "title": "Items"}, {"const": "pages", "title": "Pages"}],
            "description": "What is being counted.",
        },
    },
    "required": ["steps"],
}

# Runs in ``manage.py shell -c``: the owner's tenant gets the demo's slow counter as a tool that always runs as a
# task (a Python function granted to the tenant).
COUNTER_SCRIPT = """
from tenants import services
from tenants.models import Tenant
from tenants.backends.python_grants import python_function_grant
tenant = Tenant.objects.get(pk={tenant})
python_function_grant(tenant=tenant, function="demo.count_slowly")
tool = services.tool_create(tenant=tenant, name={name!r}, description="Counts slowly, reporting each step.",
    backend="python", config={{"function": "demo.count_slowly"}}, task_support="required", input_schema={schema!r})
print(tool.pk)
"""


def counter_tool_create(live: LiveServer, scene: TenantAdminScene) -> int:
    script = COUNTER_SCRIPT.format(tenant=scene.ours, name=COUNTER, schema=COUNTER_SCHEMA)
    return int(live.manage("shell", "-c", script).split()[-1])


def task_start(live: LiveServer, scene: TenantAdminScene, *, steps: int, delay_ms: int) -> str:
    """Call the counter as a 2026-07-28 client that takes tasks; the task's id."""
    params = {"name": COUNTER, "arguments": {"steps": steps, "delay_ms": delay_ms}}
    message = stateless_request(secrets.token_hex(4), "tools/call", params, capabilities={"extensions": {TASKS: {}}})
    response = httpx.post(
        live.endpoint(scene.ours_slug),
        json=message,
        headers=stateless_headers("tools/call", COUNTER),
        timeout=15.0,
    )
    result = response.json()["result"]
    assert result["resultType"] == "task", result
    return str(result["taskId"])


def take(live: LiveServer, browser: Any, out: Path) -> list[Path]:
    base = live.web_urls[0]
    scene = scene_create(live)
    tool = counter_tool_create(live, scene)
    with admin_page(browser, base, scene.owner, viewport={"width": 1200, "height": 900}) as page:
        shot = Shots(out, page)

        page.goto(f"{base}/admin/tenants/tool/{tool}/change/")
        page.get_by_label("Input schema").focus()
        page.keyboard.press("Control+End")
        page.get_by_role("region", name="Preview: the form a client renders").get_by_role(
            "spinbutton", name="Steps", exact=True
        ).fill("0")
        page.get_by_role("button", name="Check the preview's values").click()
        shot("admin-schema-editor", page.locator(".field-input_schema"))
        broken = json.dumps(COUNTER_SCHEMA, indent=2).replace('"minimum": 1,', '"minimum": "one",', 1)
        page.get_by_label("Input schema").focus()
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(broken)
        page.locator("#id_input_schema_problems").get_by_text("not a valid JSON Schema").wait_for()
        shot("admin-schema-editor-error", page.locator(".field-input_schema"))

        task_id = task_start(live, scene, steps=40, delay_ms=400)
        page.set_viewport_size({"width": 1600, "height": 700})
        page.goto(f"{base}/admin/jobs/toolrun/")
        page.get_by_role("button", name="Toggle navigation").click()  # the list's columns, not the sidebar
        page.get_by_text(re.compile(r"Counted ([3-9]|[0-9]{2}) of 40")).first.wait_for()
        shot("admin-tool-runs-live")
        page.get_by_role("button", name="Toggle navigation").click()  # as it was: the setting is remembered
        page.set_viewport_size({"width": 1200, "height": 900})
        page.goto(f"{base}/admin/jobs/toolrun/{task_id}/change/")
        page.get_by_text(re.compile(r"Counted ([6-9]|[0-9]{2}) of 40")).first.wait_for()
        shot("admin-tool-run-live")
        page.get_by_role("button", name="Cancel this run").click()
    return shot.paths


if __name__ == "__main__":
    sys.exit(run(sys.argv, take))
