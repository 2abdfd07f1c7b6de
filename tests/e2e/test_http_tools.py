"""HTTP tools end to end: the official SDK client, in both eras, calls tools of a live platform that make real
requests to a REST API process, authenticated with a tenant secret; one of them always runs as a task on the
worker (the embedded one, or the Celery worker of the production topology)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client

from tests import rest_api
from tests.e2e.live import LiveServer
from tests.e2e.sdk_tasks import TasksClient
from tests.rest_api import RestApi, start_rest_api

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

REQUEST_TIMEOUT = 30.0
TEST_DEADLINE = 60.0


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestApi]:
    with ExitStack() as stack:
        yield start_rest_api(stack, tmp_path_factory.mktemp("rest-api"))


def _setup(api: RestApi) -> str:
    """``manage.py shell`` source: the tenant may reach loopback (staff-set), has a secret and three HTTP tools."""
    pet = {"type": "object", "properties": {"pet_id": {"type": "string"}, "verbose": {"type": "boolean"}}}
    tools = [
        ("get_pet", {"url": api.base + "/pets/{pet_id}{?verbose}"}, pet, "forbidden"),
        ("guarded", {"url": api.base + "/auth/bearer", "auth": {"type": "bearer", "secret": "api"}}, None, "optional"),
        ("teapot", {"url": api.base + "/status/418"}, None, "forbidden"),
        ("get_pet_later", {"url": api.base + "/pets/{pet_id}"}, pet, "required"),
    ]
    statements = [
        "from tenants.secrets import secret_set",
        "services.tenant_update(tenant=tenant, data={'outbound_allowed_networks': ['127.0.0.1/32']})",
        f"secret_set(tenant=tenant, name='api', value={rest_api.BEARER_TOKEN!r})",
    ]
    for name, config, schema, task_support in tools:
        statements.append(
            f"services.tool_create(tenant=tenant, name={name!r}, backend='http', config={config!r}, "
            f"input_schema={schema or {'type': 'object'}!r}, task_support={task_support!r})"
        )
    return "; ".join(statements)


@pytest.fixture(scope="module")
def rest_tenant_url(live_platform: LiveServer, api: RestApi) -> str:
    slug = f"rest-{secrets.token_hex(4)}"
    live_platform.manage(
        "shell",
        "-c",
        f"from tenants import services; tenant = services.tenant_create(slug={slug!r}, name='Rest'); {_setup(api)}",
    )
    return live_platform.endpoint(slug)


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_sdk_client_calls_http_tools_in_both_eras(rest_tenant_url: str, mode: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(rest_tenant_url, mode=mode, cache=None, read_timeout_seconds=REQUEST_TIMEOUT) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            pet = await client.call_tool("get_pet", {"pet_id": "rex", "verbose": True})
            guarded = await client.call_tool("guarded", {})
            teapot = await client.call_tool("teapot", {})
    assert not pet.is_error
    assert pet.structured_content is not None
    assert pet.structured_content["path_params"] == {"pet_id": "rex"}
    assert pet.structured_content["query"] == [["verbose", "true"]]
    assert not guarded.is_error, text(guarded)
    assert rest_api.BEARER_TOKEN not in str(guarded)
    assert teapot.is_error
    assert text(teapot).startswith("HTTP 418 I'm a Teapot from GET ")


async def test_an_http_tool_that_requires_a_task_runs_on_the_worker(rest_tenant_url: str) -> None:
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(rest_tenant_url, cache=None, read_timeout_seconds=REQUEST_TIMEOUT, extensions=[tasks]) as c:
            result: Any = await c.call_tool("get_pet_later", {"pet_id": "whiskers"})
    (created,) = tasks.created
    assert created.status == "working"
    assert tasks.statuses[-1] == "completed"
    assert result.structured_content["path_params"] == {"pet_id": "whiskers"}
