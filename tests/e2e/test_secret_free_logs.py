"""No log line holds a secret: a production topology whose Celery worker logs at INFO (what docker/compose.yaml
ships) or DEBUG, and whose web process logs at the same level (plain, or ``LOG_FORMAT=json``), runs HTTP tools
with a query-string key and a header key, as tasks on the worker and inline on the web process, against a REST API
that quotes back everything it was sent; then every line of every process is searched for every spelling of both
keys."""

from __future__ import annotations

import secrets
from contextlib import ExitStack
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from tests.e2e.faults import start_topology
from tests.e2e.live import PRODUCTION_ONLY, ManagedProcess
from tests.e2e.sdk_tasks import TasksClient
from tests.rest_api import secret_spellings, start_rest_api

pytestmark = [
    *PRODUCTION_ONLY,
    pytest.mark.timeout(300),
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

TEST_DEADLINE = 120.0
REQUEST_TIMEOUT = 30.0
QUERY_SECRET = "Zm9v+YmFy/YmF6==" + '"\\ &?#:@%é-' + secrets.token_hex(4)
HEADER_SECRET = 'hdr+/="\\ &?#:@%-' + secrets.token_hex(4)


def _setup(api_base: str) -> str:
    """``manage.py shell`` source: the tenant's two keys and its HTTP tools, each once as a task and once inline."""
    query = {"type": "query", "name": "key", "secret": "query_key"}
    header = {"type": "header", "name": "X-API-Key", "secret": "header_key"}
    tools = [
        ("query_ok", f"{api_base}/reflect/json/200", query),
        ("query_refused", f"{api_base}/reflect/text/403", query),
        ("header_refused", f"{api_base}/reflect/json-ascii/403", header),
    ]
    statements = [
        "from tenants.secrets import secret_set",
        "services.tenant_update(tenant=tenant, data={'outbound_allowed_networks': ['127.0.0.1/32']})",
        f"secret_set(tenant=tenant, name='query_key', value={QUERY_SECRET!r})",
        f"secret_set(tenant=tenant, name='header_key', value={HEADER_SECRET!r})",
    ]
    for name, url, auth in tools:
        for suffix, support in (("_task", "required"), ("_inline", "forbidden")):
            statements.append(
                f"services.tool_create(tenant=tenant, name={name + suffix!r}, backend='http', "
                f"config={{'url': {url!r}, 'auth': {auth!r}}}, input_schema={{'type': 'object'}}, "
                f"task_support={support!r})"
            )
    return "; ".join(statements)


async def call_every_tool(endpoint: str) -> None:
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(endpoint, cache=None, read_timeout_seconds=REQUEST_TIMEOUT, extensions=[tasks]) as client:
            results = {
                f"{name}{suffix}": await client.call_tool(f"{name}{suffix}", {})
                for name in ("query_ok", "query_refused", "header_refused")
                for suffix in ("_task", "_inline")
            }
    assert len(tasks.created) == 3
    assert not results["query_ok_task"].is_error and not results["query_ok_inline"].is_error
    assert all(results[name].is_error for name in results if "refused" in name)


def log_of(process: ManagedProcess) -> str:
    return process.stdout_path.read_text(errors="replace") + process.stderr_path.read_text(errors="replace")


async def test_no_log_line_of_the_worker_or_the_web_process_holds_an_http_tools_secret(tmp_path: Path) -> None:
    """First at INFO in plain text (what compose ships), then, with the worker and the web process restarted,
    at DEBUG with ``LOG_FORMAT=json``."""
    with ExitStack() as stack:
        api = start_rest_api(stack, tmp_path)
        topology = start_topology(
            stack, tmp_path, web_processes=1, extra_env={"LOG_LEVEL": "INFO"}, worker_loglevel="INFO"
        )
        slug = await topology.atenant_create("keys", _setup(api.base))
        await call_every_tool(topology.endpoint(slug))

        topology.kill_worker()
        topology.kill_web(0)
        topology.extra_env.update({"LOG_LEVEL": "DEBUG", "LOG_FORMAT": "json"})
        topology.start_worker("DEBUG")
        topology.start_web(0)
        await call_every_tool(topology.endpoint(slug))
        logs = {process.name: log_of(process) for process in topology.processes()}

    found = {
        (name, spelling)
        for name, text in logs.items()
        for secret in (QUERY_SECRET, HEADER_SECRET)
        for spelling in secret_spellings(secret)
        if spelling in text
    }
    assert not found, found
    # And each process wrote the request lines that used to hold the query key, without their query.
    line = f"HTTP Request: GET {api.base}/reflect/json/200?…"
    assert len(logs) == 4, sorted(logs)
    for name, text in logs.items():
        assert line in text, f"{name}:\n{text[-3000:]}"
