"""``LOG_FORMAT=json``: one JSON line per MCP request with who asked what and how it ended, never a token or a
value the caller sent."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from mcp_platform.observe.calls import register_hook, unregister_hook
from mcp_platform.telemetry.hooks import RequestLogHook
from mcp_platform.telemetry.logs import JsonFormatter
from tests.gateway.conftest import request, rpc
from tests.telemetry.conftest import metric_value

REPO = Path(__file__).resolve().parents[2]
SECRET_VALUE = "hunter2-do-not-log-me"


@pytest.fixture
def request_lines() -> Iterator[io.StringIO]:
    """What the request logger writes, formatted as LOG_FORMAT=json formats it."""
    output = io.StringIO()
    handler = logging.StreamHandler(output)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("mcp_platform.requests")
    logger.addHandler(handler)
    hook = RequestLogHook()
    register_hook(hook)
    output.flush_lines = hook.flush  # type: ignore[attr-defined]
    yield output
    unregister_hook(hook)
    logger.removeHandler(handler)


@pytest.fixture
def protected(transactional_db: None) -> dict[str, Any]:
    from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, ToolFactory, UserFactory

    tenant = TenantFactory(slug="acme", name="Acme", requires_authorization=True)
    ToolFactory(tenant=tenant, name="sign_in", input_schema={"type": "object"})
    alice = UserFactory(username="alice")
    MembershipFactory(user=alice, tenant=tenant)
    return {"alice": alice, "client": OAuthClientFactory(name="Claude")}


@pytest.mark.anyio
async def test_a_request_logs_one_json_line_without_its_token_or_arguments(
    protected: dict[str, Any], request_lines: io.StringIO
) -> None:
    from tests.factories import access_token_create

    token = await sync_to_async(access_token_create)(
        user=protected["alice"], application=protected["client"], resource=["http://127.0.0.1:8000/t/acme/mcp"]
    )
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "log-tests", "version": "1"},
    }
    params = {"name": "sign_in", "arguments": {"password": SECRET_VALUE}, "_meta": meta}
    headers = {
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "sign_in",
    }
    reply = await request("POST", "/t/acme/mcp", body=rpc("tools/call", params, id="req-77"), headers=headers)
    assert reply.status == 200, reply.body

    assert request_lines.flush_lines()  # type: ignore[attr-defined]  (written by the log's own thread)
    text = request_lines.getvalue()
    [line] = [json.loads(raw) for raw in text.splitlines()]
    assert line["request_id"] == "req-77"
    assert line["tenant"] == "acme"
    assert line["principal"] == str(protected["alice"].pk)
    assert line["client_id"] == protected["client"].client_id
    assert (line["method"], line["target"], line["outcome"]) == ("tools/call", "sign_in", "ok")
    assert line["level"] == "INFO" and line["logger"] == "mcp_platform.requests"
    assert token not in text and SECRET_VALUE not in text


def test_log_format_json_switches_every_line_to_json_and_turns_the_request_log_on(tmp_path: Path) -> None:
    script = (
        "import django, logging; django.setup();"
        "from mcp_platform.observe import calls;"
        "print(sorted({'MetricsHook', 'RequestLogHook'} & {type(hook).__name__ for hook in calls._hooks}));"
        "logging.getLogger('mcp_platform.gateway').warning('plain %s', 'words')"
    )
    env = {
        **os.environ,
        "LOG_FORMAT": "json",
        "MCP_VAR_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "mcp_platform.settings",
    }
    env.pop("MCP_TRACING", None)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "['MetricsHook', 'RequestLogHook']"
    [line] = [json.loads(raw) for raw in done.stderr.splitlines() if raw.startswith("{")]
    assert line["message"] == "plain words" and line["level"] == "WARNING"


def test_a_full_queue_drops_the_line_and_counts_it_rather_than_wait() -> None:
    from mcp_platform.observe.calls import CallInfo, CallRecord

    hook = RequestLogHook(capacity=0 + 1)
    hook._writer_pid = os.getpid()  # no writer thread: nothing drains the queue
    info = CallInfo(
        1, "dropping", "tools/list", None, "", "", "", "", "2026-07-28", "streamable-http", "1", 0.0, 0.0, None, None
    )
    before = metric_value("mcp_log_lines_dropped_total", logger="mcp_platform.requests")
    for _ in range(3):
        hook.finished(CallRecord(info=info, duration_s=0.001, outcome="ok", error_code=None), None)
    assert metric_value("mcp_log_lines_dropped_total", logger="mcp_platform.requests") == before + 2
