"""Console runs through the whole ASGI stack (Django's handler streaming the run's events): the tool runs through
``mcp_core.dispatch`` as the signed-in admin; progress and questions reach the page, the page's answer and cancel
POSTs reach the run through the channel layer, a task runs on the worker's code and is followed to its result."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import ApplicationCommunicator
from django.test import Client
from django.urls import reverse

from mcp_platform.activity.hook import activity_writer
from mcp_platform.activity.models import ActivityRecord
from mcp_platform.asgi import application
from mcp_platform.console import runs
from mcp_platform.console.models import ConsoleRunRecord
from mcp_platform.jobs import execution
from mcp_platform.jobs.models import ToolRun
from mcp_platform.quotas.services import rate_limit_create
from tenants.models import Membership, Tenant, Tool
from tests.factories import MembershipFactory, ToolFactory
from tests.gateway.conftest import http_scope

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

DEADLINE = 10.0
CSRF = "c" * 32


class Admin:
    """A tenant's admin (by membership) signed in: their cookies and CSRF header for raw ASGI requests."""

    def __init__(self, user_id: int, session: str) -> None:
        self.user_id = user_id
        self.headers = {
            "host": "127.0.0.1:8000",
            "cookie": f"sessionid={session}; csrftoken={CSRF}",
            "x-csrftoken": CSRF,
            "content-type": "application/json",
        }


@sync_to_async
def admin_of(tenant: Tenant) -> Admin:
    membership = MembershipFactory(tenant=tenant, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(membership.user)
    return Admin(membership.user.pk, client.cookies["sessionid"].value)


@sync_to_async
def conformance_tool(name: str) -> Tool:
    from django.core.management import call_command

    call_command("load_conformance_tenant", verbosity=0)
    return Tool.objects.select_related("tenant").get(tenant__slug="conformance", name=name)


def console_url(view: str, tool: Tool) -> str:
    return reverse(f"admin:tenants_tool_{view}", args=[tool.pk])


class ConsoleStream:
    """The run POST, its event stream read event by event while the test answers or cancels meanwhile."""

    def __init__(self, admin: Admin, tool: Tool, body: dict[str, Any]) -> None:
        path = console_url("console_run", tool)
        self.communicator = ApplicationCommunicator(application, http_scope("POST", path, admin.headers))
        self.body = json.dumps(body).encode()
        self.buffer = ""

    async def open(self) -> int:
        await self.communicator.send_input({"type": "http.request", "body": self.body, "more_body": False})
        start = await self.communicator.receive_output(DEADLINE)
        return int(start["status"])

    async def next_event(self) -> tuple[str, dict[str, Any]]:
        while True:
            if "\n\n" in self.buffer:
                block, self.buffer = self.buffer.split("\n\n", 1)
                fields = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
                if "data" in fields:
                    return fields.get("event", "message"), json.loads(fields["data"])
                continue
            chunk = await self.communicator.receive_output(DEADLINE)
            self.buffer += chunk.get("body", b"").decode()

    async def until(self, name: str) -> dict[str, Any]:
        while True:
            event, data = await self.next_event()
            if event == name:
                return data

    async def close(self) -> None:
        await self.communicator.send_input({"type": "http.disconnect"})
        await self.communicator.wait(DEADLINE)


async def post(admin: Admin, path: str, body: dict[str, Any]) -> int:
    communicator = ApplicationCommunicator(application, http_scope("POST", path, admin.headers))
    await communicator.send_input({"type": "http.request", "body": json.dumps(body).encode(), "more_body": False})
    start = await communicator.receive_output(DEADLINE)
    while (await communicator.receive_output(DEADLINE)).get("more_body"):
        pass
    await communicator.wait(DEADLINE)
    return int(start["status"])


async def restarted(run: ToolRun) -> ToolRun:
    """The run once the page's answer started it anew (the console records the answer after the page hears
    "answered"); bounded."""
    deadline = asyncio.get_running_loop().time() + DEADLINE
    while True:
        again = await ToolRun.objects.aget(pk=run.pk)
        if again.generation > run.generation or asyncio.get_running_loop().time() > deadline:
            return again
        await asyncio.sleep(0.05)


async def test_a_static_tool_runs_and_reports_its_result_and_duration() -> None:
    tool = await sync_to_async(ToolFactory)()
    admin = await admin_of(tool.tenant)
    stream = ConsoleStream(admin, tool, {"arguments": {}})

    assert await stream.open() == 200
    run = await stream.until("run")
    outcome = await stream.until("outcome")
    await stream.close()

    assert run["tool"] == tool.name and run["asTask"] is False
    assert outcome["outcome"] == "ok"
    assert outcome["result"]["content"] == [{"type": "text", "text": f"{tool.name} answered"}]
    assert outcome["durationMs"] >= 0
    # The activity log has it, attributed to the admin and told apart from the endpoint's calls.
    logged = await sync_to_async(logged_calls)(tool.tenant)
    assert [(r.method, r.target, r.principal, r.transport, r.outcome) for r in logged] == [
        ("tools/call", tool.name, str(admin.user_id), "admin-console", "ok")
    ]


def logged_calls(tenant: Tenant) -> list[ActivityRecord]:
    activity_writer().flush()
    return list(ActivityRecord.objects.filter(tenant=tenant, kind=ActivityRecord.Kind.CALL))


async def test_progress_streams_and_the_pages_answer_reaches_the_tools_question() -> None:
    tool = await conformance_tool("test_streaming_elicitation")
    admin = await admin_of(tool.tenant)
    stream = ConsoleStream(admin, tool, {"arguments": {}})
    assert await stream.open() == 200
    run_id = (await stream.until("run"))["runId"]

    progress = await stream.until("notification")
    question = await stream.until("request")
    answered = await post(
        admin,
        console_url("console_answer", tool),
        {"runId": run_id, "requestId": question["id"], "result": {"action": "accept", "content": {"ok": True}}},
    )
    outcome = await stream.until("outcome")
    await stream.close()

    assert progress["method"] == "notifications/progress" and progress["params"]["progress"] == 50
    assert question["method"] == "elicitation/create" and question["params"]["message"] == "Continue?"
    assert answered == 204
    assert outcome["outcome"] == "ok"
    assert outcome["result"]["content"][0]["text"] == "Streaming complete: action=accept"


async def test_an_answer_for_another_admins_run_does_not_reach_it() -> None:
    tool = await conformance_tool("test_streaming_elicitation")
    admin, other = await admin_of(tool.tenant), await admin_of(tool.tenant)
    stream = ConsoleStream(admin, tool, {"arguments": {}})
    assert await stream.open() == 200
    run_id = (await stream.until("run"))["runId"]
    question = await stream.until("request")

    body = {"runId": run_id, "requestId": question["id"], "result": {"action": "accept", "content": {"ok": True}}}
    assert await post(other, console_url("console_answer", tool), body) == 204
    assert await post(other, console_url("console_cancel", tool), {"runId": run_id}) == 204
    assert await post(admin, console_url("console_answer", tool), {**body, "result": {"action": "decline"}}) == 204
    outcome = await stream.until("outcome")
    await stream.close()

    assert outcome["result"]["content"][0]["text"] == "Streaming complete: action=decline"


async def test_cancel_stops_an_inline_run() -> None:
    tool = await conformance_tool("slow_compute")
    admin = await admin_of(tool.tenant)
    stream = ConsoleStream(admin, tool, {"arguments": {"seconds": 60}})
    assert await stream.open() == 200
    run_id = (await stream.until("run"))["runId"]
    await stream.until("notification")  # it started: the tool reported progress 0

    assert await post(admin, console_url("console_cancel", tool), {"runId": run_id}) == 204
    outcome = await stream.until("outcome")
    await stream.close()

    assert outcome["outcome"] == "cancelled"
    assert outcome["durationMs"] < 60_000


async def test_a_task_tool_runs_as_a_task_attributed_to_the_admin_and_is_followed_to_its_result() -> None:
    tool = await conformance_tool("slow_compute")
    admin = await admin_of(tool.tenant)
    stream = ConsoleStream(admin, tool, {"arguments": {"seconds": 0, "label": "pi"}, "asTask": True})
    assert await stream.open() == 200
    assert (await stream.until("run"))["asTask"] is True
    task = await stream.until("task")

    run = await ToolRun.objects.aget(pk=task["taskId"])
    await execution.tool_run_execute(tenant_id=run.tenant_id, run_id=run.pk, generation=run.generation)
    outcome = await stream.until("outcome")
    await stream.close()

    assert run.principal == f"user:{admin.user_id}" and run.tool_name == "slow_compute"
    assert outcome["outcome"] == "ok" and outcome["taskId"] == run.pk
    assert outcome["result"]["content"][0]["text"] == "Computed pi after 0 second(s)"


async def test_cancel_cancels_a_task_run() -> None:
    tool = await conformance_tool("slow_compute")
    admin = await admin_of(tool.tenant)
    stream = ConsoleStream(admin, tool, {"arguments": {"seconds": 60}, "asTask": True})
    assert await stream.open() == 200
    run_id = (await stream.until("run"))["runId"]
    task = await stream.until("task")

    assert await post(admin, console_url("console_cancel", tool), {"runId": run_id}) == 204
    outcome = await stream.until("outcome")
    await stream.close()

    assert outcome["outcome"] == "cancelled"
    assert (await ToolRun.objects.aget(pk=task["taskId"])).status == "cancelled"


async def test_a_page_that_goes_away_cancels_its_task() -> None:
    tool = await conformance_tool("slow_compute")
    admin = await admin_of(tool.tenant)
    stream = ConsoleStream(admin, tool, {"arguments": {"seconds": 60}, "asTask": True})
    assert await stream.open() == 200
    task = await stream.until("task")

    await stream.close()

    assert (await ToolRun.objects.aget(pk=task["taskId"])).status == "cancelled"


async def test_a_tasks_question_is_asked_in_the_page_and_its_answer_resumes_the_task() -> None:
    tool = await conformance_tool("confirm_delete")
    admin = await admin_of(tool.tenant)
    stream = ConsoleStream(admin, tool, {"arguments": {"filename": "notes.txt"}, "asTask": True})
    assert await stream.open() == 200
    run_id = (await stream.until("run"))["runId"]
    task_id = (await stream.until("task"))["taskId"]
    first = await ToolRun.objects.aget(pk=task_id)
    await execution.tool_run_execute(tenant_id=first.tenant_id, run_id=first.pk, generation=first.generation)

    question = await stream.until("request")
    body = {"runId": run_id, "requestId": question["id"], "result": {"action": "accept", "content": {"confirm": True}}}
    assert await post(admin, console_url("console_answer", tool), body) == 204
    again = await restarted(first)
    await execution.tool_run_execute(tenant_id=again.tenant_id, run_id=again.pk, generation=again.generation)
    outcome = await stream.until("outcome")
    await stream.close()

    assert question["method"] == "elicitation/create" and question["params"]["message"] == "Delete notes.txt?"
    assert again.generation == first.generation + 1  # the answer started the call anew, its question answered
    assert outcome["outcome"] == "ok" and outcome["result"]["content"][0]["text"] == "Deleted notes.txt"


async def test_a_run_past_its_lifetime_ends_with_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runs, "MAX_RUN_SECONDS", 0.5)
    tool = await conformance_tool("slow_compute")
    admin = await admin_of(tool.tenant)
    stream = ConsoleStream(admin, tool, {"arguments": {"seconds": 60}})
    assert await stream.open() == 200

    outcome = await stream.until("outcome")
    await stream.close()

    assert outcome["outcome"] == "error" and "took over 0.5 s" in outcome["error"]["message"]
    assert outcome["durationMs"] < 10_000


async def test_a_finished_run_is_kept_for_its_admin_with_its_exchange_and_no_secret() -> None:
    schema = {"type": "object", "properties": {"order": {"type": "string"}, "api_key": {"type": "string"}}}
    tool = await sync_to_async(ToolFactory)(input_schema=schema)
    admin = await admin_of(tool.tenant)
    stream = ConsoleStream(admin, tool, {"arguments": {"order": "A-1", "api_key": "s3cret-value"}})
    assert await stream.open() == 200
    run_id = (await stream.until("run"))["runId"]
    sent = await stream.until("wire")
    received = await stream.until("wire")
    outcome = await stream.until("outcome")
    await stream.close()

    # The page is shown the messages as they went: the console's request and the server's response.
    assert sent["direction"] == "sent" and sent["message"]["id"] == run_id
    assert sent["message"]["method"] == "tools/call" and sent["message"]["params"]["name"] == tool.name
    assert received == {
        "direction": "received",
        "message": {"jsonrpc": "2.0", "id": run_id, "result": outcome["result"]},
    }
    # The history keeps them, with the secret redacted; a run again asks for it anew.
    record = await ConsoleRunRecord.objects.aget(run_id=run_id)
    assert outcome["record"]["id"] == record.pk and outcome["record"]["outcome"] == "ok"
    assert record.user_id == admin.user_id and record.tool_id == tool.pk
    assert record.arguments == {"order": "A-1", "api_key": "[redacted]"}
    assert outcome["record"]["rerunArguments"] == {"order": "A-1"}
    assert [(m["direction"], m["message"].get("method")) for m in record.exchange] == [
        ("sent", "tools/call"),
        ("received", None),
    ]
    assert record.exchange[0]["message"]["params"]["arguments"]["api_key"] == "[redacted]"
    assert record.result == outcome["result"]
    stored = await sync_to_async(lambda: json.dumps(next(iter(ConsoleRunRecord.objects.values())), default=str))()
    assert "s3cret-value" not in stored


async def test_the_exchange_holds_the_tools_question_and_the_pages_answer_in_order() -> None:
    tool = await conformance_tool("test_streaming_elicitation")
    admin = await admin_of(tool.tenant)
    stream = ConsoleStream(admin, tool, {"arguments": {}})
    assert await stream.open() == 200
    run_id = (await stream.until("run"))["runId"]
    question = await stream.until("request")
    body = {"runId": run_id, "requestId": question["id"], "result": {"action": "accept", "content": {"ok": True}}}
    assert await post(admin, console_url("console_answer", tool), body) == 204
    await stream.until("outcome")
    await stream.close()

    record = await ConsoleRunRecord.objects.aget(run_id=run_id)
    went = [(m["direction"], m["message"].get("method"), m["message"].get("id")) for m in record.exchange]
    assert went[0] == ("sent", "tools/call", run_id)
    assert ("received", "notifications/progress", None) in went
    asked = went.index(("received", "elicitation/create", question["id"]))
    assert went[asked + 1] == ("sent", None, question["id"])
    assert record.exchange[asked + 1]["message"]["result"] == {"action": "accept", "content": {"ok": True}}
    assert went[-1] == ("received", None, run_id)


async def test_console_runs_are_rate_limited_only_where_the_tenant_limits_the_console() -> None:
    tool = await sync_to_async(ToolFactory)()
    admin = await admin_of(tool.tenant)
    # Every client's default limit does not hold the console back ...
    await sync_to_async(rate_limit_create)(tenant=tool.tenant, scope="client", rate=1, period=3600, burst=1)
    assert [await run_outcome(admin, tool) for _ in range(2)] == ["ok", "ok"]

    # ... the console's own limit does.
    await sync_to_async(rate_limit_create)(
        tenant=tool.tenant, scope="client", client_id="admin-console", rate=1, period=3600, burst=1
    )
    tool = await Tool.objects.select_related("tenant").aget(pk=tool.pk)  # as the next page's request reads it
    assert [await run_outcome(admin, tool) for _ in range(2)] == ["ok", "rate_limited"]
    logged = await sync_to_async(logged_calls)(tool.tenant)
    assert sorted(r.outcome for r in logged) == ["ok", "ok", "ok", "rate_limited"]


async def run_outcome(admin: Admin, tool: Tool) -> str:
    stream = ConsoleStream(admin, tool, {"arguments": {}})
    assert await stream.open() == 200
    outcome = await stream.until("outcome")
    await stream.close()
    return str(outcome["outcome"])
