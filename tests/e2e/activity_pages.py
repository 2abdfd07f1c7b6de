"""The activity log and usage dashboard as a tenant admin, in Debian's Chromium: the set-up both the browser test
and the screenshots use, and the screenshots (``python -m tests.e2e.activity_pages [DIR]``; ``scripts/screenshots``).

The admin is made only through a membership; the other tenant's records exist and must never show.
"""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.browser import PASSWORD
from tests.e2e.live import LiveServer
from tests.e2e.screenshots import Shots, run
from tests.e2e.tenant_admin_pages import admin_page

# Runs in ``manage.py shell -c``: two tenants, an admin of the first by membership, a day of calls for each (a
# spread of tools, clients, outcomes and durations; two of the tools mirrored from an upstream, kept disabled so
# that no refresh reaches for it), and an admin change. Prints the ids the pages need.
SETUP_SCRIPT = """
import datetime as dt, random
from django.contrib.auth import get_user_model
from django.utils import timezone
from mcp_platform.activity.models import ActivityRecord
from mcp_platform.activity.services import activity_admin_change_record
from tenants import services
from tenants.models import Tool, Upstream
random.seed(7)
ours = services.tenant_create(slug={ours!r}, name="Acme support")
theirs = services.tenant_create(slug={theirs!r}, name="Globex billing")
admin = get_user_model().objects.create_user({admin!r}, {admin_email!r}, {password!r})
services.membership_add(tenant=ours, user=admin, role="admin")
upstream = Upstream.objects.create(tenant=ours, name="warehouse", url="https://warehouse.invalid/mcp", enabled=False)
for name in ("stock_level", "reserve_item"):
    Tool.objects.create(tenant=ours, name=name, backend="upstream", upstream=upstream,
                        config={{"remote": {{"name": name}}}})
now = timezone.now()
tools = [("lookup_order", 40), ("refund_order", 120), ("search_kb", 15), ("docs://handbook", 5),
         ("stock_level", 300), ("reserve_item", 700)]
clients = [("Claude Desktop", "1.4.2", "2026-07-28", "streamable-http"), ("Cursor", "0.48", "2025-11-25",
           "streamable-http"), ("legacy-agent", "0.9", "2024-11-05", "http+sse")]
rows = []
for i in range(400):
    target, base = tools[i % len(tools)]
    name, version, revision, transport = clients[i % len(clients)]
    outcome = "ok" if i % 11 else ("tool_error" if i % 2 else "error")
    rows.append(ActivityRecord(tenant=ours, at=now - dt.timedelta(minutes=random.randrange(0, 24 * 60)),
        method="resources/read" if target.startswith("docs:") else "tools/call", target=target,
        principal=str(admin.pk), client_id="app-" + str(i % 3), client_name=name, client_version=version,
        protocol_version=revision, transport=transport, request_id=str(i), outcome=outcome,
        error_code=-32602 if outcome == "error" else None, duration_ms=round(random.expovariate(1 / base), 2)))
rows.append(ActivityRecord(tenant=theirs, at=now, method="tools/call", target="globex_invoice", principal="1",
    client_name="Globex robot", request_id="g-1", duration_ms=3.0))
ActivityRecord.objects.bulk_create(rows)
activity_admin_change_record(tenant_id=ours.pk, user_id=admin.pk, action="change", object_type="tool",
    object_repr="lookup_order", object_id="1", before={{"description": "Find an order."}},
    after={{"description": "Find an order by its number."}})
theirs_row = ActivityRecord.objects.get(tenant=theirs)
print(ours.pk, theirs.pk, theirs_row.pk)
"""


@dataclass(frozen=True)
class ActivityScene:
    ours: int
    theirs: int
    their_record: int
    admin: str


def scene_create(live: LiveServer) -> ActivityScene:
    suffix = secrets.token_hex(3)
    admin = f"ada-{suffix}"
    script = SETUP_SCRIPT.format(
        ours=f"acme-{suffix}",
        theirs=f"globex-{suffix}",
        admin=admin,
        admin_email=f"{admin}@acme.example",
        password=PASSWORD,
    )
    ours, theirs, their_record = (int(v) for v in live.manage("shell", "-c", script).split()[-3:])
    return ActivityScene(ours, theirs, their_record, admin)


def take(live: LiveServer, browser: Any, out: Path) -> list[Path]:
    base = live.web_urls[0]
    scene = scene_create(live)
    with admin_page(browser, base, scene.admin, viewport={"width": 1280, "height": 900}) as page:
        shot = Shots(out, page)

        # The log is a hundred rows a page: its first screenful shows what it is.
        page.goto(f"{base}/admin/activity/activityrecord/")
        shot("activity-log", full_page=False)
        page.goto(f"{base}/admin/activity/activityrecord/?outcome__exact=tool_error&period=24h")
        shot("activity-log-filtered", full_page=False)
        page.goto(f"{base}/admin/activity/activityrecord/?kind__exact=admin")
        record = page.locator("#result_list tbody a").first.get_attribute("href")
        page.goto(f"{base}{record}")
        shot("activity-record")
        page.goto(f"{base}/admin/activity/activityrecord/usage/?window=24h")
        shot("activity-usage-dashboard")
    return shot.paths


if __name__ == "__main__":
    sys.exit(run(sys.argv, take))
