"""Task methods and task-making ``tools/call`` through ``dispatch``, in both eras, on an in-memory task store."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_core.catalog import ToolDefinition
from mcp_core.dispatch import dispatch
from mcp_core.env import Env, ServerIdentity
from mcp_core.errors import InternalError, InvalidParams, MethodNotFound, MissingClientCapability, ToolError
from mcp_core.features.lifecycle import initialize_result
from mcp_core.mrtr import InputPolicy
from mcp_core.request_state import derive_key
from mcp_core.tasks import RELATED_TASK_KEY, TASKS_EXTENSION, TaskLimitExceeded, TaskSupport
from tests.mcp_core.memory_catalog import MemoryCatalog, RecordingOutbound
from tests.mcp_core.memory_tasks import MemoryTaskStore

pytestmark = pytest.mark.anyio

V = "2026-07-28"
WITH_TASKS = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}


async def compute(ctx: Any, label: str = "") -> str:
    return f"computed {label}"


async def failing(ctx: Any) -> str:
    raise ToolError("the job failed")


async def broken(ctx: Any) -> str:
    raise InternalError("the job broke at the protocol level")


async def confirm(ctx: Any, filename: str = "") -> str:
    answer = await ctx.elicit(f"Delete {filename}?", CONFIRM)
    return "deleted" if answer["content"].get("confirm") else "kept"


async def two_questions(ctx: Any) -> str:
    first, second = await asyncio.gather(ctx.elicit("First?", CONFIRM), ctx.elicit("Second?", CONFIRM))
    return f"{first['action']} {second['action']}"


async def asks_then_works(ctx: Any) -> str:
    answer = await ctx.elicit("Name?", {"type": "object"}, key="user_name")
    await ctx.continue_as_task()
    return f"Hello, {answer['content']['name']}, from the background"


TOOLS: dict[str, tuple[Any, TaskSupport, bool]] = {
    "compute": (compute, TaskSupport.OPTIONAL, False),
    "greet": (compute, TaskSupport.FORBIDDEN, False),
    "failing": (failing, TaskSupport.REQUIRED, False),
    "broken": (broken, TaskSupport.OPTIONAL, False),
    "confirm": (confirm, TaskSupport.OPTIONAL, False),
    "two_questions": (two_questions, TaskSupport.OPTIONAL, False),
    "asks_then_works": (asks_then_works, TaskSupport.REQUIRED, True),
}


class TaskCatalog(MemoryCatalog):
    """The memory catalog with task support per tool."""

    async def get_tool(self, name: str) -> ToolDefinition | None:
        found = await super().get_tool(name)
        if found is None:
            return None
        _, support, continues = TOOLS[name]
        return ToolDefinition(found.wire, found.handle, task_support=support, continues_as_task=continues)


def catalog() -> TaskCatalog:
    found = TaskCatalog()
    for name, (fn, _, _) in TOOLS.items():
        found.add_tool({"name": name, "description": name, "inputSchema": {"type": "object"}}, fn)
    return found


def policy() -> InputPolicy:
    return InputPolicy(keys=(derive_key("secret", "mrtr"),), now=1000.0, ttl=60, tenant="t1", principal="p1")


def stateless_env(store: MemoryTaskStore, capabilities: dict[str, Any] | None = None) -> Env:
    return Env(
        version=V,
        catalog=store.catalog,
        outbound=RecordingOutbound(),
        server=ServerIdentity("srv", "1.0"),
        client_capabilities=WITH_TASKS if capabilities is None else capabilities,
        input_policy=policy(),
        tasks=store,
    )


@pytest.fixture
def store() -> MemoryTaskStore:
    return MemoryTaskStore(catalog(), version=V)


async def call(store: MemoryTaskStore, name: str, arguments: dict[str, Any] | None = None, **extra: Any) -> Any:
    return await dispatch("tools/call", {"name": name, "arguments": arguments or {}, **extra}, stateless_env(store))


async def get(store: MemoryTaskStore, task_id: str) -> dict[str, Any]:
    return await dispatch("tasks/get", {"taskId": task_id}, stateless_env(store))


# ---- 2026-07-28: the tasks extension --------------------------------------------------------------------


async def test_discover_advertises_the_extension_and_no_core_tasks_slot(store):
    capabilities = (await dispatch("server/discover", {}, stateless_env(store)))["capabilities"]
    assert capabilities["extensions"] == {TASKS_EXTENSION: {}}
    assert "tasks" not in capabilities


async def test_a_task_supporting_tool_answers_with_a_flat_task_that_tasks_get_finds_at_once(store):
    created = await call(store, "compute", {"label": "x"})
    assert created["resultType"] == "task" and created["status"] == "working"
    assert not {"task", "result", "requestState", "inputRequests", "ttl", "pollInterval"} & set(created)
    found = await get(store, created["taskId"])
    assert (found["resultType"], found["taskId"], found["status"]) == ("complete", created["taskId"], "working")


async def test_a_completed_task_inlines_the_call_result(store):
    created = await call(store, "compute", {"label": "x"})
    await store.run(created["taskId"])
    found = await get(store, created["taskId"])
    assert found["status"] == "completed"
    assert found["result"]["content"] == [{"type": "text", "text": "computed x"}]
    assert RELATED_TASK_KEY not in found["result"].get("_meta", {})


async def test_a_tool_error_completes_and_a_protocol_error_fails(store):
    failed_tool = await call(store, "failing")
    broken_call = await call(store, "broken")
    await store.run(failed_tool["taskId"])
    await store.run(broken_call["taskId"])
    completed = await get(store, failed_tool["taskId"])
    failed = await get(store, broken_call["taskId"])
    assert (completed["status"], completed["result"]["isError"]) == ("completed", True)
    assert failed["status"] == "failed" and "result" not in failed
    assert failed["error"] == {"code": -32603, "message": "the job broke at the protocol level"}


async def test_without_the_extension_calls_run_inline_and_required_tools_are_refused(store):
    env = stateless_env(store, capabilities={})
    inline = await dispatch("tools/call", {"name": "compute", "arguments": {"label": "y"}}, env)
    assert inline["resultType"] == "complete" and "taskId" not in inline
    with pytest.raises(MissingClientCapability) as caught:
        await dispatch("tools/call", {"name": "failing", "arguments": {}}, env)
    assert caught.value.data["requiredCapabilities"]["extensions"] == {TASKS_EXTENSION: {}}


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tasks/get", {"taskId": "x"}),
        ("tasks/update", {"taskId": "x", "inputResponses": {}}),
        ("tasks/cancel", {"taskId": "x"}),
    ],
)
async def test_task_methods_need_the_extension_on_the_request(store, method, params):
    with pytest.raises(MissingClientCapability):
        await dispatch(method, params, stateless_env(store, capabilities={"elicitation": {}}))


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
async def test_methods_the_extension_removed_are_not_found(store, method):
    with pytest.raises(MethodNotFound) as caught:
        await dispatch(method, {"taskId": "x"}, stateless_env(store))
    assert caught.value.http_status == 404


async def test_unknown_task_ids_are_invalid_params(store):
    for method in ("tasks/get", "tasks/cancel", "tasks/update"):
        with pytest.raises(InvalidParams, match="Task not found"):
            await dispatch(method, {"taskId": "nope", "inputResponses": {}}, stateless_env(store))


async def test_cancel_acknowledges_empty_and_also_for_finished_tasks(store):
    running = await call(store, "compute")
    finished = await call(store, "compute")
    await store.run(finished["taskId"])
    ack = await dispatch("tasks/cancel", {"taskId": running["taskId"]}, stateless_env(store))
    again = await dispatch("tasks/cancel", {"taskId": finished["taskId"]}, stateless_env(store))
    assert {k for k in ack if k != "_meta"} == {"resultType"} and ack["resultType"] == "complete"
    assert {k for k in again if k != "_meta"} == {"resultType"}
    assert (await get(store, running["taskId"]))["status"] == "cancelled"
    assert (await get(store, finished["taskId"]))["status"] == "completed"


async def test_a_task_asks_through_input_required_and_resumes_after_tasks_update(store):
    created = await call(store, "confirm", {"filename": "a.txt"})
    await store.run(created["taskId"])
    waiting = await get(store, created["taskId"])
    assert waiting["status"] == "input_required"
    (key,) = waiting["inputRequests"]
    assert waiting["inputRequests"][key]["method"] == "elicitation/create"
    ack = await dispatch(
        "tasks/update",
        {"taskId": created["taskId"], "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}}},
        stateless_env(store),
    )
    assert {k for k in ack if k != "_meta"} == {"resultType"}
    assert (await get(store, created["taskId"]))["status"] == "working"
    await store.run(created["taskId"])
    assert (await get(store, created["taskId"]))["result"]["content"][0]["text"] == "deleted"


async def test_partial_answers_keep_the_task_waiting_for_the_rest(store):
    created = await call(store, "two_questions")
    await store.run(created["taskId"])
    first, second = (await get(store, created["taskId"]))["inputRequests"]
    accept = {"action": "accept", "content": {"confirm": True}}
    await dispatch(
        "tasks/update", {"taskId": created["taskId"], "inputResponses": {first: accept}}, stateless_env(store)
    )
    after_first = await get(store, created["taskId"])
    assert after_first["status"] == "input_required" and list(after_first["inputRequests"]) == [second]
    await dispatch(
        "tasks/update",
        {"taskId": created["taskId"], "inputResponses": {second: accept, "unknown-key": {"ignored": True}}},
        stateless_env(store),
    )
    await store.run(created["taskId"])
    done = await get(store, created["taskId"])
    assert done["result"]["content"][0]["text"] == "accept accept"
    assert store.tasks[created["taskId"]].runs == 2


async def test_a_tool_asks_first_in_the_request_then_continues_as_a_task(store):
    first = await call(store, "asks_then_works")
    assert first["resultType"] == "input_required" and "taskId" not in first
    answer = {"action": "accept", "content": {"name": "Alice"}}
    second = await call(
        store, "asks_then_works", inputResponses={"user_name": answer}, requestState=first["requestState"]
    )
    assert second["resultType"] == "task" and not {"requestState", "inputRequests"} & set(second)
    await store.run(second["taskId"])
    done = await get(store, second["taskId"])
    assert done["result"]["content"][0]["text"] == "Hello, Alice, from the background"


async def test_tool_definitions_keep_execution_only_for_2025_11_25(store):
    store.catalog.tools["compute"][0]["execution"] = {"taskSupport": "optional"}
    stateless = await dispatch("tools/list", {}, stateless_env(store))
    handshake = await dispatch("tools/list", {}, handshake_env(store))
    assert all("execution" not in tool for tool in stateless["tools"])
    assert {"taskSupport": "optional"} in [tool.get("execution") for tool in handshake["tools"]]


async def test_too_many_unfinished_tasks_are_refused():
    limited = MemoryTaskStore(catalog(), version=V, limit=1)
    await call(limited, "compute")
    with pytest.raises(TaskLimitExceeded):
        await call(limited, "compute")


# ---- 2025-11-25: tasks in core ------------------------------------------------------------------------


def handshake_env(
    store: MemoryTaskStore, version: str = "2025-11-25", outbound: RecordingOutbound | None = None
) -> Env:
    return Env(
        version=version,
        catalog=store.catalog,
        outbound=outbound or RecordingOutbound(),
        server=ServerIdentity("srv", "1.0"),
        client_capabilities={"elicitation": {}},
        tasks=store,
    )


@pytest.fixture
def old_store() -> MemoryTaskStore:
    return MemoryTaskStore(catalog(), version="2025-11-25", ttl_ms=120_000)


def test_initialize_declares_core_tasks_from_2025_11_25_only():
    identity = ServerIdentity("srv", "1.0")
    tasks = initialize_result(identity, "2025-11-25", tasks=True)["capabilities"]["tasks"]
    assert tasks == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert "tasks" not in initialize_result(identity, "2025-06-18", tasks=True)["capabilities"]


async def test_params_task_makes_a_nested_task_with_the_ttl_capped(old_store):
    env = handshake_env(old_store)
    created = await dispatch("tools/call", {"name": "compute", "arguments": {}, "task": {"ttl": 10**9}}, env)
    assert created["task"]["status"] == "working" and created["task"]["ttl"] == 120_000
    plain = await dispatch("tools/call", {"name": "compute", "arguments": {}}, env)
    assert "task" not in plain and plain["content"]


async def test_a_required_tool_called_without_params_task_is_method_not_found(old_store):
    with pytest.raises(MethodNotFound):
        await dispatch("tools/call", {"name": "failing", "arguments": {}}, handshake_env(old_store))


async def test_tasks_result_waits_and_returns_the_result_tied_to_its_task(old_store):
    outbound = RecordingOutbound()
    env = handshake_env(old_store, outbound=outbound)
    created = await dispatch("tools/call", {"name": "compute", "arguments": {"label": "z"}, "task": {}}, env)
    task_id = created["task"]["taskId"]
    result = await dispatch("tasks/result", {"taskId": task_id}, env)
    assert result["content"] == [{"type": "text", "text": "computed z"}]
    assert result["_meta"][RELATED_TASK_KEY] == {"taskId": task_id}
    # The change it waited for was announced on the stream, without related-task (the task id is in it).
    ((method, params),) = outbound.notifications
    assert (method, params["taskId"], params["status"]) == ("notifications/tasks/status", task_id, "completed")
    assert "_meta" not in params


async def test_tasks_result_asks_the_task_questions_on_its_stream(old_store):
    outbound = RecordingOutbound({"elicitation/create": {"action": "accept", "content": {"confirm": False}}})
    env = handshake_env(old_store, outbound=outbound)
    created = await dispatch("tools/call", {"name": "confirm", "arguments": {"filename": "b"}, "task": {}}, env)
    task_id = created["task"]["taskId"]
    result = await dispatch("tasks/result", {"taskId": task_id}, env)
    assert result["content"][0]["text"] == "kept"
    (method, params), *_ = outbound.requests
    assert method == "elicitation/create" and params["_meta"][RELATED_TASK_KEY] == {"taskId": task_id}


async def test_tasks_result_of_a_failed_task_is_its_error(old_store):
    env = handshake_env(old_store)
    created = await dispatch("tools/call", {"name": "broken", "arguments": {}, "task": {}}, env)
    with pytest.raises(Exception) as caught:
        await dispatch("tasks/result", {"taskId": created["task"]["taskId"]}, env)
    assert getattr(caught.value, "code", None) == -32603


async def test_cancel_returns_the_cancelled_task_and_refuses_finished_ones(old_store):
    env = handshake_env(old_store)
    running = (await dispatch("tools/call", {"name": "compute", "arguments": {}, "task": {}}, env))["task"]
    cancelled = await dispatch("tasks/cancel", {"taskId": running["taskId"]}, env)
    assert cancelled["status"] == "cancelled"
    with pytest.raises(InvalidParams, match="terminal status 'cancelled'"):
        await dispatch("tasks/cancel", {"taskId": running["taskId"]}, env)


async def test_tasks_list_pages_newest_first(old_store):
    env = handshake_env(old_store)
    env.page_size = 2
    ids = [
        (await dispatch("tools/call", {"name": "compute", "arguments": {}, "task": {}}, env))["task"]["taskId"]
        for _ in range(3)
    ]
    first = await dispatch("tasks/list", {}, env)
    second = await dispatch("tasks/list", {"cursor": first["nextCursor"]}, env)
    assert [t["taskId"] for t in first["tasks"] + second["tasks"]] == ids[::-1]
    assert "nextCursor" not in second


async def test_revisions_before_2025_11_25_have_no_task_methods(old_store):
    with pytest.raises(MethodNotFound):
        await dispatch("tasks/get", {"taskId": "x"}, handshake_env(old_store, version="2025-06-18"))
