"""Tasks on a tenant endpoint, through the whole ASGI stack, with the worker's side run in process: the 2026-07-28
extension (server-directed tasks, tasks/get, tasks/update, tasks/cancel) and 2025-11-25 tasks (params.task,
tasks/result asking the task's questions on its stream, tasks/list), bound to tenant, principal and session."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mcp_core.features.subscriptions import parse_listen
from mcp_core.tasks import RELATED_TASK_KEY, TASKS_EXTENSION, TaskSnapshot, TaskStatus
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import Inbox
from mcp_platform.gateway.listen import ListenStream
from mcp_platform.jobs import execution
from mcp_platform.jobs.models import ToolRun
from tenants.models import Backend
from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, ToolFactory, UserFactory
from tests.factories import access_token_create as _token_create
from tests.gateway.conftest import INIT_PARAMS, OpenStream, request, rpc

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

V = "2026-07-28"
MCP = "/t/conformance/mcp"
DEADLINE = 10.0
WITH_TASKS = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
NAME_SOURCES = {"tools/call": "name", "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


async def call(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    capabilities: dict[str, Any] | None = None,
    path: str = MCP,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One stateless request; its JSON-RPC message."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": WITH_TASKS if capabilities is None else capabilities,
    }
    body_params = {**(params or {}), "_meta": meta}
    sent = {"mcp-protocol-version": V, "mcp-method": method}
    source = NAME_SOURCES.get(method)
    if source:
        sent["mcp-name"] = str(body_params.get(source, ""))
    reply = await request("POST", path, body=rpc(method, body_params), headers={**sent, **(headers or {})})
    return reply.messages()[-1]


async def work(task_id: str) -> None:
    """Be the worker: run the task's current start to its end."""
    run = await ToolRun.objects.aget(pk=task_id)
    await execution.tool_run_execute(tenant_id=run.tenant_id, run_id=run.pk, generation=run.generation)


# ---- 2026-07-28 -----------------------------------------------------------------------------------------


async def test_discover_offers_the_tasks_extension(conformance):
    result = (await call("server/discover"))["result"]
    assert result["capabilities"]["extensions"] == {TASKS_EXTENSION: {}}


async def test_a_task_is_found_at_once_and_inlines_its_result_once_a_worker_ran_it(conformance):
    created = (await call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0, "label": "now"}}))[
        "result"
    ]
    task_id = created["taskId"]
    working = (await call("tasks/get", {"taskId": task_id}))["result"]
    await work(task_id)
    done = (await call("tasks/get", {"taskId": task_id}))["result"]

    assert (created["resultType"], created["status"], created["ttlMs"], created["pollIntervalMs"]) == (
        "task",
        "working",
        3_600_000,
        1000,
    )
    assert (working["resultType"], working["status"]) == ("complete", "working")
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "Computed now after 0 second(s)"}]


async def test_without_the_extension_the_same_call_answers_inline(conformance):
    reply = await call(
        "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}}, capabilities={"elicitation": {}}
    )
    assert reply["result"]["resultType"] == "complete" and "taskId" not in reply["result"]


async def test_a_task_asks_and_replays_with_the_answer(conformance):
    task_id = (await call("tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"}}))["result"][
        "taskId"
    ]
    await work(task_id)
    waiting = (await call("tasks/get", {"taskId": task_id}))["result"]
    answers = {key: {"action": "accept", "content": {"confirm": True}} for key in waiting["inputRequests"]}
    ack = await call("tasks/update", {"taskId": task_id, "inputResponses": answers})
    await work(task_id)
    done = (await call("tasks/get", {"taskId": task_id}))["result"]

    assert waiting["status"] == "input_required"
    assert {k for k in ack["result"] if k != "_meta"} == {"resultType"}
    assert done["result"]["content"][0]["text"] == "Deleted a.txt"


async def test_cancelling_a_task_stops_the_worker_running_it(conformance):
    task_id = (await call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}}))["result"]["taskId"]
    worker = asyncio.create_task(work(task_id))
    # Whether the cancel meets the call running or about to start, a minute of work ends well within the deadline.
    async with asyncio.timeout(DEADLINE):
        ack = await call("tasks/cancel", {"taskId": task_id})
        await worker
    after = (await call("tasks/get", {"taskId": task_id}))["result"]

    assert ack["result"]["resultType"] == "complete"
    assert (after["status"], "result" in after) == ("cancelled", False)


def listen_request(task_ids: list[str], capabilities: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    meta = {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": capabilities}
    body = rpc("subscriptions/listen", {"notifications": {"taskIds": task_ids}, "_meta": meta}, id=30)
    return body, {"mcp-protocol-version": V, "mcp-method": "subscriptions/listen"}


async def test_a_listen_stream_carries_the_status_of_the_callers_tasks(conformance):
    task_id = (await call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}}))["result"]["taskId"]
    stream = OpenStream(MCP, *listen_request([task_id, "someone-elses-task"], WITH_TASKS))
    await stream.open()
    try:
        ack = await stream.next_message()
        now = await stream.next_message()
        await work(task_id)
        changes = [await stream.next_message()]
        # The run reports its start (its status message) before it completes; the stream sends the task as it is
        # when it hears of a change, so it may already have completed by then.
        while changes[-1]["params"]["status"] == "working":
            changes.append(await stream.next_message())
    finally:
        await stream.close()
    done = changes[-1]

    assert ack["params"]["notifications"] == {"taskIds": [task_id]}
    assert (now["method"], now["params"]["taskId"], now["params"]["status"]) == (
        "notifications/tasks",
        task_id,
        "working",
    )
    assert done["params"]["status"] == "completed" and done["params"]["result"]["content"]
    assert done["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 30


async def test_a_listen_stream_sends_a_task_state_once_however_many_nudges_read_it() -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    subscription = parse_listen({"notifications": {"taskIds": ["t-1"]}}, 1, WITH_TASKS).honouring_tasks(["t-1"])
    stream = ListenStream(send, subscription)
    moment = datetime(2026, 7, 28, tzinfo=UTC)
    working = TaskSnapshot("t-1", TaskStatus.WORKING, moment, moment, 60_000)
    later = TaskSnapshot("t-1", TaskStatus.WORKING, moment, moment + timedelta(seconds=1), 60_000, status_message="1/2")

    for task in (working, working, later, later, None):
        await stream.task_changed(task)

    assert len(sent) == 2


async def test_listening_for_tasks_needs_the_extension(conformance):
    body, headers = listen_request(["t-1"], {})
    reply = await request("POST", MCP, body=body, headers=headers)
    assert (reply.status, reply.json()["error"]["code"]) == (400, -32021)


async def test_the_mcp_name_header_must_name_the_task(conformance):
    task_id = (await call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}}))["result"]["taskId"]
    reply = await call("tasks/get", {"taskId": task_id}, headers={"mcp-name": "another-task"})
    assert reply["error"]["code"] == -32020


async def test_too_many_unfinished_tasks_is_a_clear_error(conformance, settings):
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TASK_MAX_ACTIVE_PER_PRINCIPAL": 1}
    await call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}})
    refused = await call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}})
    assert refused["error"]["code"] == -32000
    assert "at most 1 per caller" in refused["error"]["message"]


async def test_each_anonymous_client_has_its_own_allowance_of_unfinished_tasks(conformance, settings):
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TASK_MAX_ACTIVE_PER_PRINCIPAL": 1}
    settings.MCP_PLATFORM["TRUSTED_PROXIES"] = ["127.0.0.1/32"]
    slow = {"name": "slow_compute", "arguments": {"seconds": 60}}

    async def call_from(address: str) -> dict[str, Any]:
        return await call("tools/call", slow, headers={"x-forwarded-for": address})

    first = await call_from("203.0.113.7")
    again = await call_from("203.0.113.7")
    other = await call_from("198.51.100.9")

    assert first["result"]["status"] == "working"
    assert again["error"]["code"] == -32000
    assert other["result"]["status"] == "working"


@pytest.fixture
def protected(transactional_db: None) -> dict[str, Any]:
    """A tenant behind OAuth with a task-supporting tool, two members with tokens, and a second tenant."""
    acme = TenantFactory(slug="acme", requires_authorization=True)
    globex = TenantFactory(slug="globex", requires_authorization=True)
    for tenant in (acme, globex):
        ToolFactory(
            tenant=tenant,
            name="slow_compute",
            backend=Backend.PYTHON,
            config={"function": "conformance.slow_compute"},
            input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}},
            task_support="optional",
        )
    client = OAuthClientFactory(name="Claude")
    tokens = {}
    for name in ("alice", "bob"):
        user = UserFactory(username=name)
        MembershipFactory(user=user, tenant=acme)
        MembershipFactory(user=user, tenant=globex)
        for tenant in (acme, globex):
            resource = [f"http://127.0.0.1:8000/t/{tenant.slug}/mcp"]
            tokens[(name, tenant.slug)] = _token_create(user=user, application=client, resource=resource)
    return tokens


async def test_a_task_is_visible_to_its_principal_only_and_in_its_tenant_only(protected):
    def bearer(name: str, slug: str = "acme") -> dict[str, str]:
        return {"authorization": f"Bearer {protected[(name, slug)]}"}

    created = await call(
        "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}}, path="/t/acme/mcp", headers=bearer("alice")
    )
    task_id = created["result"]["taskId"]
    own = await call("tasks/get", {"taskId": task_id}, path="/t/acme/mcp", headers=bearer("alice"))
    bobs = await call("tasks/get", {"taskId": task_id}, path="/t/acme/mcp", headers=bearer("bob"))
    elsewhere = await call("tasks/get", {"taskId": task_id}, path="/t/globex/mcp", headers=bearer("alice", "globex"))
    bob_cancels = await call("tasks/cancel", {"taskId": task_id}, path="/t/acme/mcp", headers=bearer("bob"))

    assert own["result"]["taskId"] == task_id
    assert bobs["error"]["code"] == elsewhere["error"]["code"] == bob_cancels["error"]["code"] == -32602
    assert (await ToolRun.objects.aget(pk=task_id)).principal.startswith("user:")


# ---- 2025-11-25 -----------------------------------------------------------------------------------------


async def initialize() -> str:
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS))
    assert reply.json()["result"]["capabilities"]["tasks"] == {
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }
    return reply.headers["mcp-session-id"]


async def session_call(session_id: str, method: str, params: dict[str, Any] | None = None, id: int = 1) -> Any:
    reply = await request(
        "POST",
        MCP,
        body=rpc(method, params, id=id),
        headers={"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"},
    )
    return [m for m in reply.messages() if m.get("id") == id][-1]


async def test_tool_lists_say_which_tools_run_as_tasks(conformance):
    session_id = await initialize()
    tools = {t["name"]: t for t in (await session_call(session_id, "tools/list"))["result"]["tools"]}
    assert tools["slow_compute"]["execution"] == {"taskSupport": "optional"}
    assert tools["failing_job"]["execution"] == {"taskSupport": "required"}
    assert "execution" not in tools["greet"]


async def test_params_task_makes_a_task_tasks_result_waits_for(conformance):
    session_id = await initialize()
    created = await session_call(
        session_id, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, "task": {"ttl": 60_000}}
    )
    task = created["result"]["task"]
    waiting = asyncio.create_task(session_call(session_id, "tasks/result", {"taskId": task["taskId"]}, id=2))
    await work(task["taskId"])
    async with asyncio.timeout(DEADLINE):
        result = (await waiting)["result"]

    assert (task["status"], task["ttl"]) == ("working", 60_000)
    assert result["content"][0]["text"] == "Computed result after 0 second(s)"
    assert result["_meta"][RELATED_TASK_KEY] == {"taskId": task["taskId"]}


async def test_a_required_tool_without_params_task_is_method_not_found(conformance):
    session_id = await initialize()
    reply = await session_call(session_id, "tools/call", {"name": "failing_job", "arguments": {}})
    assert reply["error"]["code"] == -32601


async def test_tasks_list_and_get_see_only_the_session_s_tasks(conformance):
    mine, theirs = await initialize(), await initialize()
    task_id = (
        await session_call(mine, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, "task": {}})
    )["result"]["task"]["taskId"]

    listed = (await session_call(mine, "tasks/list"))["result"]["tasks"]
    others = (await session_call(theirs, "tasks/list"))["result"]["tasks"]
    stranger = await session_call(theirs, "tasks/get", {"taskId": task_id})

    assert [t["taskId"] for t in listed] == [task_id]
    assert others == [] and stranger["error"]["code"] == -32602


async def test_tasks_result_asks_the_task_s_questions_on_its_stream(conformance):
    session_id = await initialize()
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    task_id = (
        await session_call(
            session_id, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "b.txt"}, "task": {}}
        )
    )["result"]["task"]["taskId"]
    await work(task_id)
    stream = OpenStream(MCP, rpc("tasks/result", {"taskId": task_id}, id=5), headers)
    await stream.open()
    try:
        question = await stream.next_message()
        answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"confirm": True}}}
        run = await ToolRun.objects.aget(pk=task_id)
        news = Inbox()
        await news.join(groups.task_group(run.tenant_id, task_id))
        try:
            posted = await request("POST", MCP, body=answer, headers=headers)
            assert await news.next(DEADLINE) is not None  # the answer is stored: the task works again
        finally:
            await news.leave()
        await work(task_id)
        announced = []
        while "id" not in (result := await stream.next_message()):
            announced.append(result)
    finally:
        await stream.close()

    assert question["method"] == "elicitation/create"
    assert question["params"]["_meta"][RELATED_TASK_KEY] == {"taskId": task_id}
    assert posted.status == 202
    assert result["id"] == 5 and result["result"]["content"][0]["text"] == "Deleted b.txt"
    # Status changes are announced as the stream sees them (working again may pass unseen): completed is last.
    assert {m["method"] for m in announced} == {"notifications/tasks/status"}
    assert announced[-1]["params"]["status"] == "completed"


async def test_cancel_returns_the_task_and_refuses_a_finished_one(conformance):
    session_id = await initialize()
    task_id = (
        await session_call(session_id, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 9}, "task": {}})
    )["result"]["task"]["taskId"]
    cancelled = await session_call(session_id, "tasks/cancel", {"taskId": task_id})
    again = await session_call(session_id, "tasks/cancel", {"taskId": task_id})

    assert cancelled["result"]["status"] == "cancelled"
    assert again["error"]["code"] == -32602
