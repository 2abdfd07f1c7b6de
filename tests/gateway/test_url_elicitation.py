"""A tool that needs the person to visit a page first (``ctx.require_url_visit``), as each era's client sees it through
the whole ASGI stack: -32042 with the page for a 2025-11-25 client that takes URLs, a failed tool carrying the link for
one that does not, an ``input_required`` question whose retry goes on for 2026-07-28, an ``input_required`` task in
both task shapes; and ``notifications/elicitation/complete`` on the person's GET streams once they connected.

The official SDK client drives the application in process (``tests/gateway/in_process.py``); tasks are driven by
hand, with the worker's side run in process."""

from __future__ import annotations

import asyncio
import json
import secrets
from datetime import timedelta
from typing import Any

import mcp_types as types
import pytest
from asgiref.sync import sync_to_async
from mcp.client import ClientRequestContext
from mcp.shared.exceptions import MCPError

from mcp_core.context import ToolContext
from mcp_core.tasks import TASKS_EXTENSION
from mcp_platform.gateway.models import LegacySession
from mcp_platform.jobs import execution
from mcp_platform.jobs.models import ToolRun
from tenants.backends.registry import python_tool
from tenants.connections.signals import connection_completed
from tenants.models import Secret
from tests.gateway.conftest import OpenStream, request, rpc
from tests.gateway.in_process import ORIGIN, in_process_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

ACME = "/t/acme/mcp"
CONNECT_PAGES = f"{ORIGIN}/connect/"
MESSAGE = "Connect your Example account to read its notes."
DEADLINE = 10.0
URL_DECLARED = {"elicitation": {"form": {}, "url": {}}}


@python_tool("tests.gateway.example_notes")
async def example_notes(ctx: ToolContext, account: str) -> str:
    """The notes of an account the person connects on a page of the platform (here: a tenant secret marks it)."""
    # A new link and id on every run, as each run of a connect flow starts afresh.
    elicitation_id = secrets.token_hex(8)
    if not await Secret.objects.filter(name=f"connected-{account}").aexists():
        await ctx.require_url_visit(MESSAGE, f"{CONNECT_PAGES}{elicitation_id}/", elicitation_id)
    if not await Secret.objects.filter(name=f"connected-{account}").aexists():
        return f"{account} is still not connected"
    return f"notes of {account}"


@pytest.fixture
def acme(transactional_db: None) -> dict[str, Any]:
    """A tenant that requires authorization, with the tool (any call may become a task), two members and a client."""
    from tenants.backends.python_grants import python_function_grant
    from tenants.services import tool_create
    from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, UserFactory

    tenant = TenantFactory(slug="acme", name="Acme", requires_authorization=True)
    python_function_grant(tenant=tenant, function="tests.gateway.example_notes")
    tool_create(
        tenant=tenant,
        name="notes",
        backend="python",
        config={"function": "tests.gateway.example_notes"},
        input_schema={"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]},
        task_support="optional",
    )
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    for person in (alice, bob):
        MembershipFactory(user=person, tenant=tenant)
    return {"tenant": tenant, "alice": alice, "bob": bob, "client": OAuthClientFactory(name="Claude")}


async def bearer(acme: dict[str, Any], person: str = "alice") -> dict[str, str]:
    from tests.factories import access_token_create

    token = await sync_to_async(access_token_create)(
        user=acme[person], application=acme["client"], resource=[ORIGIN + ACME]
    )
    return {"authorization": f"Bearer {token}"}


async def connect(acme: dict[str, Any], account: str) -> None:
    """What the person does on the page: the account is connected."""
    from tenants.secrets import secret_set

    await sync_to_async(secret_set)(tenant=acme["tenant"], name=f"connected-{account}", value="yes")


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent), block
    return block.text


class Person:
    """The client's elicitation callback: records each URL-mode question, and answers as the person does."""

    def __init__(self, action: str = "accept", on_visit: Any = None) -> None:
        self.action = action
        self.on_visit = on_visit
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.model_dump(by_alias=True, mode="json", exclude_none=True))
        if self.on_visit is not None:
            await self.on_visit()
        return types.ElicitResult(action=self.action)


# ---- 2025-11-25 -----------------------------------------------------------------------------------------


async def test_a_2025_client_that_takes_urls_gets_the_url_elicitation_required_error_with_the_page(acme):
    auth = await bearer(acme)
    async with asyncio.timeout(DEADLINE):
        async with in_process_client(ACME, headers=auth, mode="legacy", elicitation_callback=Person()) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("notes", {"account": "work"})

    error = raised.value.error
    assert error.code == -32042 and error.message == MESSAGE
    (page,) = error.data["elicitations"]
    assert (page["mode"], page["message"]) == ("url", MESSAGE)
    assert page["url"] == f"{CONNECT_PAGES}{page['elicitationId']}/"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_client_that_takes_no_urls_gets_a_failed_tool_carrying_the_link(acme, mode):
    auth = await bearer(acme)
    async with asyncio.timeout(DEADLINE):
        async with in_process_client(ACME, headers=auth, mode=mode) as client:
            result = await client.call_tool("notes", {"account": "work"})

    assert result.is_error is True
    assert MESSAGE in text_of(result) and f"open {CONNECT_PAGES}" in text_of(result)


async def test_the_same_error_reaches_a_client_of_the_2024_11_05_transport(acme):
    from tests.gateway.test_stream_access import open_sse_stream

    auth = await bearer(acme)
    stream = await open_sse_stream(auth)
    try:
        endpoint = stream.text.split("event: endpoint\ndata: ", 1)[1].split("\n", 1)[0].strip()
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": URL_DECLARED,
            "clientInfo": {"name": "t", "version": "1"},
        }
        for message in (
            rpc("initialize", init, id=1),
            rpc("notifications/initialized", id=None),
            rpc("tools/call", {"name": "notes", "arguments": {"account": "work"}}, id=2),
        ):
            assert (await request("POST", endpoint, body=message, headers=auth)).status == 202
        await stream.until(lambda: '"id":2' in stream.text, timeout=DEADLINE)
    finally:
        await stream.close()

    messages = [json.loads(line[6:]) for line in stream.text.splitlines() if line.startswith("data: {")]
    (answer,) = [message for message in messages if message.get("id") == 2]
    assert answer["error"]["code"] == -32042
    (page,) = answer["error"]["data"]["elicitations"]
    assert page["mode"] == "url" and page["url"].startswith(CONNECT_PAGES)


# ---- 2026-07-28 -----------------------------------------------------------------------------------------


async def test_a_2026_client_is_asked_to_visit_and_its_retry_goes_on_once_the_person_connected(acme):
    auth = await bearer(acme)
    person = Person(on_visit=lambda: connect(acme, "work"))
    async with asyncio.timeout(DEADLINE):
        async with in_process_client(ACME, headers=auth, mode="2026-07-28", elicitation_callback=person) as client:
            result = await client.call_tool("notes", {"account": "work"})

    assert text_of(result) == "notes of work"
    (asked,) = person.asked
    assert (asked["mode"], asked["message"]) == ("url", MESSAGE)
    assert asked["url"] == f"{CONNECT_PAGES}{asked['elicitationId']}/"


async def test_a_2026_client_whose_person_declines_gets_a_failed_tool_saying_so(acme):
    auth = await bearer(acme)
    async with asyncio.timeout(DEADLINE):
        async with in_process_client(
            ACME, headers=auth, mode="2026-07-28", elicitation_callback=Person(action="decline")
        ) as client:
            result = await client.call_tool("notes", {"account": "work"})

    assert result.is_error is True and "declined" in text_of(result)


# ---- tasks ----------------------------------------------------------------------------------------------


async def work(task_id: str) -> None:
    """Be the worker: run the task's current start to its end."""
    run = await ToolRun.objects.aget(pk=task_id)
    await execution.tool_run_execute(tenant_id=run.tenant_id, run_id=run.pk, generation=run.generation)


async def stateless(method: str, params: dict[str, Any], auth: dict[str, str], name: str) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {**URL_DECLARED, "extensions": {TASKS_EXTENSION: {}}},
    }
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method, "mcp-name": name, **auth}
    reply = await request("POST", ACME, body=rpc(method, {**params, "_meta": meta}), headers=headers)
    return reply.messages()[-1]


async def test_a_task_of_the_2026_extension_waits_for_the_visit_and_goes_on_after_it(acme):
    auth = await bearer(acme)
    call = {"name": "notes", "arguments": {"account": "work"}}
    task_id = (await stateless("tools/call", call, auth, "notes"))["result"]["taskId"]
    await work(task_id)
    waiting = (await stateless("tasks/get", {"taskId": task_id}, auth, task_id))["result"]
    await connect(acme, "work")
    answers = {key: {"action": "accept"} for key in waiting["inputRequests"]}
    await stateless("tasks/update", {"taskId": task_id, "inputResponses": answers}, auth, task_id)
    await work(task_id)
    done = (await stateless("tasks/get", {"taskId": task_id}, auth, task_id))["result"]

    assert waiting["status"] == "input_required"
    (question,) = waiting["inputRequests"].values()
    assert question["method"] == "elicitation/create"
    assert (question["params"]["mode"], question["params"]["message"]) == ("url", MESSAGE)
    assert done["status"] == "completed" and done["result"]["content"] == [{"type": "text", "text": "notes of work"}]


async def test_a_2025_task_waits_for_the_visit_and_tasks_result_asks_it_as_a_url_request(acme):
    auth = await bearer(acme)
    init = {"protocolVersion": "2025-11-25", "capabilities": URL_DECLARED, "clientInfo": {"name": "t", "version": "1"}}
    opened = await request("POST", ACME, body=rpc("initialize", init), headers=auth)
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25", **auth}
    call = {"name": "notes", "arguments": {"account": "work"}, "task": {}}
    created = (await request("POST", ACME, body=rpc("tools/call", call, id=2), headers=session)).messages()[-1]
    task_id = created["result"]["task"]["taskId"]
    await work(task_id)
    status = (await request("POST", ACME, body=rpc("tasks/get", {"taskId": task_id}, id=3), headers=session)).json()
    stream = OpenStream(ACME, rpc("tasks/result", {"taskId": task_id}, id=4), session)
    await stream.open()
    try:
        question = await stream.next_message()
    finally:
        await stream.close()

    assert status["result"]["status"] == "input_required"
    assert question["method"] == "elicitation/create"
    assert (question["params"]["mode"], question["params"]["message"]) == ("url", MESSAGE)


# ---- after the person connected: notifications/elicitation/complete on their GET streams -----------------


class Listener:
    """A 2025-11-25 client session holding its GET stream, keeping the elicitation completions it hears."""

    def __init__(self, auth: dict[str, str], *, takes_urls: bool) -> None:
        self.heard: asyncio.Queue[str] = asyncio.Queue()
        self.get_stream_open = asyncio.Event()
        options: dict[str, Any] = {"elicitation_callback": Person()} if takes_urls else {}
        self.client = in_process_client(
            ACME, headers=auth, mode="legacy", message_handler=self.hear, on_response=self.started, **options
        )

    def started(self, request: Any, status: int) -> None:
        # The GET's response starts once its stream listens to the session (the SDK opens it after the handshake).
        if request.method == "GET" and status == 200:
            self.get_stream_open.set()

    async def hear(self, message: Any) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            self.heard.put_nowait(message.params.elicitation_id)

    async def __aenter__(self) -> Listener:
        await self.client.__aenter__()
        await self.get_stream_open.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.__aexit__(*exc)


async def test_a_person_who_connected_is_told_on_the_get_streams_of_their_sessions_that_take_urls(acme):
    alice, bob = await bearer(acme), await bearer(acme, "bob")
    tenant_id = acme["tenant"].pk
    async with asyncio.timeout(DEADLINE):
        async with (
            Listener(alice, takes_urls=True) as first,
            Listener(alice, takes_urls=True) as second,
            Listener(alice, takes_urls=False) as no_urls,
            Listener(bob, takes_urls=True) as other,
        ):
            # Sent from a coroutine, then from a sync view's thread (as the connect callback page sends it).
            connection_completed.send(
                None, tenant_id=tenant_id, user_id=acme["alice"].pk, elicitation_id="e-1", target="tool:1"
            )
            heard_first = [await first.heard.get(), await second.heard.get()]
            await sync_to_async(connection_completed.send)(
                None, tenant_id=tenant_id, user_id=acme["alice"].pk, elicitation_id="e-2", target="tool:1"
            )
            heard_second = [await first.heard.get(), await second.heard.get()]
            # Messages to one process's streams arrive in order: had alice's been sent to the others, they
            # would be there before this one.
            connection_completed.send(
                None, tenant_id=tenant_id, user_id=acme["bob"].pk, elicitation_id="b", target="tool:1"
            )
            heard_by_bob = await other.heard.get()

    assert heard_first == ["e-1", "e-1"] and heard_second == ["e-2", "e-2"] and heard_by_bob == "b"
    assert no_urls.heard.empty() and other.heard.empty()


async def test_only_the_persons_recent_open_sessions_that_take_urls_and_can_hear_are_chosen(acme):
    from django.utils import timezone

    from mcp_platform.gateway.elicitations import MAX_SESSIONS
    from mcp_platform.gateway.sessions import legacy_sessions_taking_urls

    now = timezone.now()
    alice = f"user:{acme['alice'].pk} client:{acme['client'].client_id}"

    async def session(name: str, *, minutes_ago: int = 0, **fields: Any) -> None:
        row = {
            "principal": alice,
            "state": "ready",
            "client_capabilities": URL_DECLARED,
            "standalone_stream_id": "s",
            "standalone_seen_at": now,
            **fields,
        }
        await LegacySession.objects.acreate(id=name, tenant=acme["tenant"], **row)
        await LegacySession.objects.filter(id=name).aupdate(last_seen_at=now - timedelta(minutes=minutes_ago))

    for number in range(MAX_SESSIONS + 5):
        await session(f"recent-{number:02d}", minutes_ago=1 + number)
    await session("sse", transport="sse", standalone_stream_id="", standalone_seen_at=None)
    await session("no-get-stream", standalone_stream_id="", standalone_seen_at=None)
    await session("stream-lapsed", standalone_seen_at=now - timedelta(minutes=5))
    await session("closed", state="closed")
    await session("idle", minutes_ago=24 * 60)
    await session("form-only", client_capabilities={"elicitation": {"form": {}}})
    await session("url-false", client_capabilities={"elicitation": {"url": False}})
    await session("url-null", client_capabilities={"elicitation": {"url": None}})
    await session("other-person", principal=f"user:{acme['alice'].pk}0 client:{acme['client'].client_id}")

    chosen = await legacy_sessions_taking_urls(
        tenant_id=acme["tenant"].pk, user_id=acme["alice"].pk, limit=MAX_SESSIONS
    )

    assert chosen == ["sse", *(f"recent-{number:02d}" for number in range(MAX_SESSIONS - 1))]
