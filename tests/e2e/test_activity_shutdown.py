"""A web process stopped normally (SIGTERM) writes every activity record it still holds before it exits."""

from __future__ import annotations

import secrets
import signal
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest

from tests.e2e.live import (
    PYTHON,
    STOP_TIMEOUT,
    base_env,
    live_pki,
    prepare_data,
    run_command,
    start_web,
    wait_for_port,
)
from tests.e2e.raw_http import raw_http_client, stateless_headers, stateless_request

pytestmark = pytest.mark.anyio

CALLS = 25
COUNT_ROWS = "from mcp_platform.activity.models import ActivityRecord; print(ActivityRecord.objects.count())"


def rows(env: dict[str, str]) -> int:
    """The activity rows stored (``shell`` prints a note on its imports first)."""
    return int(run_command([str(PYTHON), "manage.py", "shell", "-c", COUNT_ROWS], env).split()[-1])


async def test_records_buffered_at_sigterm_are_written_before_the_process_exits(tmp_path: Path) -> None:
    env = base_env(tmp_path / "var", secrets.token_urlsafe(32), live_pki(tmp_path))
    # Nothing is written while it serves: only the shutdown flush can store the rows.
    env.update({"MCP_ACTIVITY_FLUSH_SECONDS": "3600", "MCP_ACTIVITY_BATCH": "100000"})
    prepare_data(env)
    process, url = start_web("web", env, tmp_path)
    try:
        wait_for_port(process, int(urlsplit(url).port or 0))
        async with raw_http_client() as http:
            with anyio.fail_after(60):
                for number in range(CALLS):
                    message = stateless_request(number, "tools/call", {"name": "test_simple_text", "arguments": {}})
                    reply = await http.post(
                        f"{url}/t/conformance/mcp",
                        json=message,
                        headers=stateless_headers("tools/call", "test_simple_text"),
                    )
                    assert reply.status_code == 200
        assert rows(env) == 0
        process.popen.send_signal(signal.SIGTERM)
        # uvicorn hands SIGTERM back after its graceful shutdown (143); daphne and granian return (0).
        assert process.popen.wait(STOP_TIMEOUT) in (0, 128 + signal.SIGTERM), process.tail()
    finally:
        process.stop()
    assert rows(env) == CALLS, process.tail()
