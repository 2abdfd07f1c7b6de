"""A fresh start, as ``scripts/serve`` makes it on a new clone: its ``manage.py`` commands, run as the script runs
them, print one line (the demo tenant's summary), load no conformance tenant, and the platform they start logs no
warning, error or 404 while a newcomer opens the landing page, the admin's sign-in page and its static files, and a
client lists the demo tenant's tools."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.e2e.live import (
    COMMAND_TIMEOUT,
    MIGRATED,
    REPO,
    ManagedProcess,
    free_port,
    sqlite_database,
    wait_for_port,
)

# Past the default: a platform to start (and, once, the TypeScript SDK to install) on a shared machine.
pytestmark = pytest.mark.timeout(300)

SERVE_SCRIPT = REPO / "scripts" / "serve"
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
TROUBLE = re.compile(r"warn|error|traceback|not found|exception", re.IGNORECASE)


def serve_commands(port: int) -> tuple[list[list[str]], list[str]]:
    """The ``manage.py`` commands ``scripts/serve`` runs before the server (with its defaults), and the server's."""
    before, server = [], []
    for line in SERVE_SCRIPT.read_text().splitlines():
        found = re.fullmatch(r"\s*(exec\s+)?python manage\.py (.+)", line)
        if not found:
            continue
        words = shlex.split(found[2].replace("$demo", "--if-missing").replace('"${args[@]}"', f"--port {port}"))
        if found[1]:
            server = words
        else:
            before.append(words)
    assert server, "scripts/serve starts no server"
    return before, server


def test_a_fresh_start_is_quiet(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env.update({"MCP_VAR_DIR": str(tmp_path / "var"), "PYTHONUNBUFFERED": "1"})
    sqlite_database(env, prepared_with=MIGRATED)  # what the script's migrate makes, made once per test run
    port = free_port()
    before, server = serve_commands(port)

    printed = []
    for words in before:
        done = subprocess.run(
            [str(REPO / ".venv" / "bin" / "python"), "manage.py", *words],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        assert done.returncode == 0, f"{words}: {done.stdout}\n{done.stderr}"
        printed += (done.stdout + done.stderr).splitlines()
    process = ManagedProcess.start(
        "fresh", [str(REPO / ".venv" / "bin" / "python"), "manage.py", *server], env, tmp_path
    )
    try:
        wait_for_port(process, port)
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=30.0, follow_redirects=True) as http:
            statuses = {
                path: http.get(path).status_code
                for path in ("/", "/favicon.ico", "/admin/", "/static/admin/css/base.css", "/static/platform.css")
            }
            listed = http.post(
                "/t/demo/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": STATELESS_META}},
                headers={
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2026-07-28",
                    "Mcp-Method": "tools/list",
                },
            )
            conformance = http.post("/t/conformance/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    finally:
        process.stop()
    logged = process.stdout_path.read_text().splitlines() + process.stderr_path.read_text().splitlines()

    assert len(printed) == 1 and re.fullmatch(
        r"Tenant 'demo' \(/t/demo/mcp\): \d+ created, 0 updated, 0 unchanged\.", printed[0]
    ), printed
    assert statuses == dict.fromkeys(statuses, 200)
    assert listed.status_code == 200 and listed.json()["result"]["tools"]
    assert conformance.status_code == 404  # no conformance tenant in a newcomer's platform
    assert [line for line in logged if TROUBLE.search(line)] == []
