"""Tools that act as the person, end to end (issue 30): the platform under test has a tenant whose upstream is a
second platform instance requiring OAuth (``tests/e2e/personal_upstreams.py``), reached as each person. A member's
official SDK client calls the upstream's ``whoami``; she is asked to connect as her client's era allows, connects in
Chromium (signing in on both instances, allowing at the upstream), and her retry acts as her upstream account; others
are asked for their own. Tasks wait for her, removing the connection revokes it at the upstream, expired tokens are
refreshed once, a refused refresh asks again, a token exchange reaches the Notes API with a token for it alone, and no
token or key is left readable in the database, the logs or the activity log.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.e2e.live import LiveServer, free_port
from tests.e2e.personal_connections import (
    TOOL,
    UPSTREAM,
    Completions,
    Member,
    Scene,
    Visitor,
    activity_rows,
    calls_at_once,
    chromium,
    connect_headless,
    connect_in_chromium,
    database_dump,
    every_credential_value,
    http_tool_create,
    mcp_client,
    platform_output,
    refresh_at_upstream,
    revoke_at_upstream,
    scene_create,
    store_key_headless,
    text_of,
    whoami,
)
from tests.e2e.personal_upstreams import OAuthClient, PersonalUpstream, confidential_client_create, start_notes_api
from tests.e2e.raw_http import RawSession, request_message, sse_events
from tests.e2e.sdk_tasks import TasksClient

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

TEST_DEADLINE = 120.0
DYNAMIC = {"type": "user_oauth", "client": "dynamic"}
URL_ELICITATION_REQUIRED = -32042
CONCURRENT_CALLS = 4
# What a person connecting sees: the platform's sign-in, its connect page, the upstream's sign-in and consent (the
# platform registered itself there by name), and the platform's page once the tokens are kept.
CONNECTING_PAGES = [
    "Sign in",
    f"Connect your account to upstream {UPSTREAM}",
    "Sign in",
    "MCP platform wants to access Personal upstream",
    "Connected",
]


@pytest.fixture
async def scene(live_platform: LiveServer, personal_upstream: PersonalUpstream) -> AsyncIterator[Scene]:
    made = await scene_create(live_platform, personal_upstream, auth=DYNAMIC)
    try:
        yield made
    finally:
        await made.aclose()


@pytest.mark.browser
async def test_a_2026_client_is_asked_to_connect_and_after_connecting_in_chromium_acts_as_her(scene: Scene) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        alice, bob = await scene.member("alice"), await scene.member("bob")
        async with chromium() as browser:
            visits = []

            async def visit(url: str) -> None:
                visits.append(await connect_in_chromium(browser, url, alice))

            asking = Visitor(visit)
            async with mcp_client(scene.endpoint(), alice, elicitation_callback=asking) as client:
                first = await client.call_tool(TOOL, {})
                again = await client.call_tool(TOOL, {})
        declining = Visitor(action="decline")
        async with mcp_client(scene.endpoint(), bob, elicitation_callback=declining) as client:
            refused = await client.call_tool(TOOL, {})
        registration = await scene.registration()

    (question,) = asking.asked
    assert question["mode"] == "url" and question["url"].startswith(f"{scene.base_url}/connect/")
    assert "connect your account" in question["message"]
    (seen,) = visits
    assert seen.headings == CONNECTING_PAGES, seen
    assert whoami(first) == {"username": alice.upstream.username, "client_id": registration["client_id"]}
    assert whoami(again) == whoami(first)
    (bob_question,) = declining.asked
    assert bob_question["url"] != question["url"]
    assert refused.is_error and "declined" in text_of(refused)


@pytest.mark.browser
async def test_a_2025_client_gets_the_url_elicitation_error_and_hears_when_she_has_connected(scene: Scene) -> None:
    completions = Completions()
    with anyio.fail_after(TEST_DEADLINE):
        carol = await scene.member("carol")
        options = {"mode": "legacy", "elicitation_callback": Visitor(), "message_handler": completions}
        async with mcp_client(scene.endpoint(), carol, **options) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool(TOOL, {})
            (asked,) = raised.value.error.data["elicitations"]
            async with chromium() as browser:
                visit = await connect_in_chromium(browser, asked["url"], carol)
            await completions.completed.wait()
            retried = await client.call_tool(TOOL, {})

    error = raised.value.error
    assert error.code == URL_ELICITATION_REQUIRED
    assert asked["mode"] == "url" and asked["url"].startswith(f"{scene.base_url}/connect/")
    assert asked["message"] == error.message
    assert visit.headings == CONNECTING_PAGES, visit
    assert completions.heard == [asked["elicitationId"]]
    assert whoami(retried)["username"] == carol.upstream.username


async def test_with_a_client_the_upstreams_admin_registered_removing_the_connection_revokes_it_there(
    live_platform: LiveServer, personal_upstream: PersonalUpstream
) -> None:
    upstream = personal_upstream
    with anyio.fail_after(TEST_DEADLINE):
        client = await upstream.oauth_client_create(
            name="The platform under test",
            redirect_uris=[f"{live_platform.web_urls[0]}/connect/callback/"],
            confidential=True,
        )
        auth = {"type": "user_oauth", "client": "manual", "client_id": client.client_id, "secret": "upstream-client"}
        scene = await scene_create(
            live_platform, upstream, auth=auth, secrets_to_set={"upstream-client": client.secret}
        )
        try:
            dave = await scene.member("dave")
            connecting = Visitor(lambda url: connect_headless(scene, url, dave))
            async with mcp_client(scene.endpoint(), dave, elicitation_callback=connecting) as mcp:
                connected = await mcp.call_tool(TOOL, {})
            stored = await scene.credential(dave)
            assert stored is not None
            tokens = stored["values"]
            before = (await upstream.initialize(tokens["access_token"])).status_code
            revoked = await scene.remove(dave)
            after = (await upstream.initialize(tokens["access_token"])).status_code
            refreshed = await refresh_at_upstream(upstream, tokens["refresh_token"], client)
            asked_again = Visitor(action="decline")
            async with mcp_client(scene.endpoint(), dave, elicitation_callback=asked_again) as mcp:
                refused = await mcp.call_tool(TOOL, {})
            removed = await scene.credential(dave)
        finally:
            await scene.aclose()

    assert whoami(connected) == {"username": dave.upstream.username, "client_id": client.client_id}
    (first,) = connecting.asked
    assert stored["kind"] == "oauth" and stored["status"] == "active" and tokens["refresh_token"]
    assert (before, revoked, after) == (200, True, 401)
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    assert removed is None
    (second,) = asked_again.asked
    assert second["url"] != first["url"] and second["mode"] == "url"
    assert refused.is_error and "declined" in text_of(refused)


async def test_a_task_started_before_connecting_waits_for_her_and_completes_after(scene: Scene) -> None:
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        erin = await scene.member("erin")
        connecting = Visitor(lambda url: connect_headless(scene, url, erin))
        async with mcp_client(scene.endpoint(), erin, elicitation_callback=connecting, extensions=[tasks]) as client:
            result = await client.call_tool(TOOL, {})

    assert len(tasks.created) == 1, "the call ran as a task"
    assert "input_required" in tasks.statuses and tasks.statuses[-1] == "completed", tasks.statuses
    (asked,) = connecting.asked
    assert asked["mode"] == "url" and asked["url"].startswith(f"{scene.base_url}/connect/")
    assert whoami(result)["username"] == erin.upstream.username


async def test_a_2025_task_started_before_connecting_asks_on_its_result_stream_and_completes_after(
    scene: Scene,
) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        lena = await scene.member("lena")
        async with mcp_client(scene.endpoint(), lena) as client:
            await client.list_tools()  # her client is authorized on the platform
        bearer = {"Authorization": f"Bearer {lena.access_token}"}
        async with httpx.AsyncClient(headers=bearer, timeout=30.0) as http:
            session = RawSession(http, scene.endpoint())
            await session.initialize(capabilities={"elicitation": {"url": {}}})
            created = await session.call("tools/call", {"name": TOOL, "arguments": {}, "task": {}})
            task_id = created["result"]["task"]["taskId"]
            questions, statuses = [], []
            result_id = session.next_id()
            async with session.stream_post(request_message(result_id, "tasks/result", {"taskId": task_id})) as stream:
                async for event in sse_events(stream):
                    message = event.message()
                    if message is not None and message.get("method") == "elicitation/create":
                        questions.append(message["params"])
                        statuses.append((await session.call("tasks/get", {"taskId": task_id}))["result"]["status"])
                        await connect_headless(scene, message["params"]["url"], lena)
                        answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept"}}
                        assert (await session.post(answer)).status_code == 202
                    elif message is not None and message.get("id") == result_id:
                        break
            statuses.append((await session.call("tasks/get", {"taskId": task_id}))["result"]["status"])

    (question,) = questions
    assert question["mode"] == "url" and question["url"].startswith(f"{scene.base_url}/connect/")
    assert statuses == ["input_required", "completed"]
    assert message["result"]["structuredContent"]["username"] == lena.upstream.username


async def test_an_expired_token_is_refreshed_once_for_calls_at_the_same_moment_and_a_refused_refresh_asks_again(
    scene: Scene,
) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        frank = await scene.member("frank")
        connecting = Visitor(lambda url: connect_headless(scene, url, frank))
        async with mcp_client(scene.endpoint(), frank, elicitation_callback=connecting) as client:
            whoami(await client.call_tool(TOOL, {}))
        connected = await scene.credential(frank)
        granted = await scene.upstream_grants(frank)
        await scene.expire(frank)
        answers = await calls_at_once(scene, frank, webs=[0] * CONCURRENT_CALLS)
        refreshed = await scene.credential(frank)
        after_refresh = await scene.upstream_grants(frank)

        # The upstream revokes the refresh token (the person withdrew the grant there): the next refresh is refused.
        assert refreshed is not None
        registration = await scene.registration()
        public = OAuthClient(registration["client_id"])
        assert (await revoke_at_upstream(scene.upstream, refreshed["values"]["refresh_token"], public)) == 200
        await scene.expire(frank)
        asked_again = Visitor(action="decline")
        async with mcp_client(scene.endpoint(), frank, elicitation_callback=asked_again) as client:
            refused = await client.call_tool(TOOL, {})
        needing = await scene.credential(frank)

    assert connected is not None and refreshed is not None and needing is not None
    assert [whoami(answer)["username"] for answer in answers] == [frank.upstream.username] * CONCURRENT_CALLS
    assert granted == {"grants": 1, "revoked": 0}
    assert after_refresh == {"grants": 2, "revoked": 1}, "exactly one refresh reached the upstream"
    assert refreshed["refreshed_at"] and refreshed["values"] != connected["values"]
    assert needing["status"] == "needs_person" and "invalid_grant" in needing["last_error"]
    (asked,) = asked_again.asked
    assert asked["mode"] == "url" and refused.is_error and "declined" in text_of(refused)


async def test_a_token_exchange_reaches_the_notes_api_with_a_token_for_it_alone(scene: Scene, tmp_path: Path) -> None:
    port = free_port()
    api_url = f"http://127.0.0.1:{port}"
    with anyio.fail_after(TEST_DEADLINE), ExitStack() as stack:
        notes_client = await confidential_client_create(
            scene.live, scene.slug, name="Notes API", scopes=["mcp:tools"], exchange_targets=[api_url]
        )
        auth = {
            "type": "token_exchange",
            "client_id": notes_client.client_id,
            "secret": "notes-api-client",
            "audience": api_url,
        }
        await http_tool_create(
            scene, "notes_me", url=f"{api_url}/me", auth=auth, secrets_to_set={"notes-api-client": notes_client.secret}
        )
        start_notes_api(stack, tmp_path / "notes-api", issuer=scene.base_url, client=notes_client, port=port)
        gina = await scene.member("gina")
        async with mcp_client(scene.endpoint(), gina) as client:
            answer = await client.call_tool("notes_me", {})
        own_token = gina.access_token
        async with httpx.AsyncClient(timeout=30.0) as http:
            with_own_token = await http.get(f"{api_url}/me", headers={"Authorization": f"Bearer {own_token}"})
            introspected = await http.post(
                f"{scene.base_url}/oauth/introspect/",
                data={"token": own_token},
                auth=(notes_client.client_id, notes_client.secret),
            )

    assert not answer.is_error, text_of(answer)
    me = json.loads(text_of(answer))
    # The API introspected what it got as active, for its own audience (it refuses anything else), acting for gina,
    # issued to the exchanging client: not her client's token.
    assert me["username"] == gina.account.username
    assert me["client_id"] == me["actor"] == notes_client.client_id
    assert gina.app.storage.client_info is not None and me["client_id"] != gina.app.storage.client_info.client_id
    assert with_own_token.status_code == 401 and 'error="invalid_token"' in with_own_token.headers["www-authenticate"]
    assert introspected.json() == {"active": False}


async def test_no_token_or_key_is_readable_in_the_database_the_logs_or_the_activity_log(scene: Scene) -> None:
    key = f"hanna-key-{secrets.token_urlsafe(12)}"
    with anyio.fail_after(TEST_DEADLINE):
        hanna = await scene.member("hanna")
        connecting = Visitor(lambda url: connect_headless(scene, url, hanna))
        async with mcp_client(scene.endpoint(), hanna, elicitation_callback=connecting) as client:
            whoami(await client.call_tool(TOOL, {}))
            first = await scene.credential(hanna)
            await scene.expire(hanna)
            whoami(await client.call_tool(TOOL, {}))
            refreshed = await scene.credential(hanna)
        # Her own key for an API (the upstream's greet endpoint stands in: what it answers does not matter here).
        key_auth = {"type": "user_key", "placement": "header", "name": "X-Api-Key", "label": "Upstream API key"}
        await http_tool_create(scene, "keyed", url=f"{scene.upstream.issuer}/healthz", auth=key_auth)
        storing = Visitor(lambda url: store_key_headless(url, hanna, key))
        async with mcp_client(scene.endpoint(), hanna, elicitation_callback=storing) as client:
            keyed = await client.call_tool("keyed", {})
        everyone = await every_credential_value(scene.live)
        rows = await eventually_logged(scene, hanna, calls=3)
        dump = database_dump(scene.live)
        output = platform_output(scene.live)

    assert first is not None and refreshed is not None
    hers = [*first["values"].values(), *refreshed["values"].values(), key]
    assert len(set(hers)) == 5 and key in everyone and set(first["values"].values()) <= set(hers)
    assert not keyed.is_error, keyed
    assert "Serving MCP on" in output, "the platform's output is read from its start"
    for value in {*hers, *everyone}:
        assert value not in dump, "a credential in the database dump"
        assert value not in output, "a credential in the platform's output"
        assert all(value not in json.dumps(row) for row in rows), "a credential in the activity log"


async def eventually_logged(scene: Scene, member: Member, *, calls: int) -> list[dict[str, Any]]:
    """The tenant's activity rows, once ``calls`` calls of ``member`` are among them (rows are written in batches)."""
    deadline = anyio.current_time() + 20.0
    while True:
        rows = await activity_rows(scene)
        theirs = [
            row
            for row in rows
            if row["kind"] == "call" and row["client_id"] == member.app.storage.client_info.client_id
        ]
        if len(theirs) >= calls or anyio.current_time() > deadline:
            assert len(theirs) >= calls, rows
            return rows
        await anyio.sleep(0.5)
