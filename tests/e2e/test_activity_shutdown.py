"""A web process stopped normally (SIGTERM) drains at once when it runs no request (a stream left open ends), and
writes every activity record it still holds before it exits; the health probes reach neither its access log nor
its activity log."""

from __future__ import annotations

import secrets
import signal
import time
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
from tests.e2e.raw_http import raw_http_client, sse_events, stateless_headers, stateless_request

pytestmark = pytest.mark.anyio

CALLS = 25
COUNT_ROWS = "from mcp_platform.activity.models import ActivityRecord; print(ActivityRecord.objects.count())"


def rows(env: dict[str, str]) -> int:
    """The activity rows stored (``shell`` prints a note on its imports first)."""
    return int(run_command([str(PYTHON), "manage.py", "shell", "-c", COUNT_ROWS], env).split()[-1])


async def test_sigterm_ends_an_idle_process_at_once_and_it_writes_the_records_it_holds(tmp_path: Path) -> None:
    env = base_env(tmp_path / "var", secrets.token_urlsafe(32), live_pki(tmp_path))
    # Nothing is written while it serves: only the shutdown flush can store the rows.
    env.update({"MCP_ACTIVITY_FLUSH_SECONDS": "3600", "MCP_ACTIVITY_BATCH": "100000"})
    prepare_data(env)
    process, url = start_web("web", env, tmp_path, "--access-log")
    listen = stateless_request("listen", "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
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
                for path in ("/healthz", "/readyz"):
                    assert (await http.get(f"{url}{path}")).status_code == 200
                assert rows(env) == 0
                headers = stateless_headers("subscriptions/listen")
                async with http.stream("POST", f"{url}/t/conformance/mcp", json=listen, headers=headers) as stream:
                    events = sse_events(stream)
                    await anext(events)  # the acknowledgement
                    signalled = time.monotonic()
                    process.popen.send_signal(signal.SIGTERM)
                    for _ in range(100):
                        if (await http.get(f"{url}/readyz")).status_code == 503:
                            break
                        await anyio.sleep(0.01)
                    not_ready = time.monotonic() - signalled
                    assert not_ready < 1
                    # The stream ends (cleanly) with the drain: the client listens again elsewhere.
                    assert [event async for event in events] == []
                    ended = time.monotonic() - signalled
        # uvicorn hands SIGTERM back after its graceful shutdown (143); daphne and granian return (0).
        assert await anyio.to_thread.run_sync(process.popen.wait, STOP_TIMEOUT) in (0, 128 + signal.SIGTERM)
        exited = time.monotonic() - signalled
    finally:
        process.stop()
    print(f"not ready {not_ready:.3f} s, stream ended {ended:.2f} s, exited {exited:.2f} s after SIGTERM")
    assert exited < 3, process.tail()
    assert rows(env) == CALLS, process.tail()
    access_log = process.stderr_path.read_text(errors="replace") + process.stdout_path.read_text(errors="replace")
    assert "/t/conformance/mcp" in access_log, process.tail()
    assert "/healthz" not in access_log and "/readyz" not in access_log, process.tail()
