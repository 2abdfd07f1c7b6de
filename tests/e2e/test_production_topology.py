"""One handshake-era session served by two web processes that share PostgreSQL and Redis.

Nothing a session needs may live in one process: requests, streams and answers to server-to-client
requests arrive wherever the load balancer sends them.
"""

from __future__ import annotations

import anyio

from tests.e2e.live import PRODUCTION_ONLY, LiveServer, in_tenant
from tests.e2e.raw_http import (
    RawSession,
    is_progress,
    next_message,
    post_until_first_progress,
    raw_http_client,
    request_message,
    resume_until_response,
    sse_events,
    stateless_headers,
    stateless_request,
)

pytestmark = PRODUCTION_ONLY

TEST_DEADLINE = 60.0
CREATE_FRESH_TOOL = (
    "services.tool_create(tenant=tenant, name='fresh_tool', config={'content': [{'type': 'text', 'text': 'fresh'}]})"
)


async def test_session_initialized_on_a_serves_requests_on_b(live_platform: LiveServer) -> None:
    async with raw_http_client() as http:
        on_a = RawSession(http, live_platform.endpoint(web=0))
        with anyio.fail_after(TEST_DEADLINE):
            await on_a.initialize()
            on_b = on_a.joined(live_platform.endpoint(web=1))
            listed = await on_b.call("tools/list")
            called = await on_b.call("tools/call", {"name": "test_simple_text", "arguments": {}})
    names = {tool["name"] for tool in listed["result"]["tools"]}
    assert {"test_simple_text", "test_sampling", "test_elicitation"} <= names
    assert called["result"]["content"] == [{"type": "text", "text": "This is a simple text response for testing."}]


async def test_standalone_stream_on_a_hears_of_a_tool_created_by_another_process(live_platform: LiveServer) -> None:
    slug = await live_platform.atenant_create("listen")
    create_tool = in_tenant(slug, CREATE_FRESH_TOOL)
    async with raw_http_client() as http:
        session = RawSession(http, live_platform.endpoint(slug, web=0))
        with anyio.fail_after(TEST_DEADLINE):
            await session.initialize()
            async with session.stream_get() as stream:
                assert stream.status_code == 200
                events = sse_events(stream)
                priming = await anext(events)
                assert priming.id and priming.data == "", "the stream opens with a priming event"

                await live_platform.amanage("shell", "-c", create_tool)
                message = await next_message(events)
            assert message["method"] == "notifications/tools/list_changed", message
            listed = await session.joined(live_platform.endpoint(slug, web=1)).call("tools/list")
    assert [tool["name"] for tool in listed["result"]["tools"]] == ["fresh_tool"]


async def test_elicitation_answered_on_b_completes_the_call_streaming_on_a(live_platform: LiveServer) -> None:
    async with raw_http_client() as http:
        on_a = RawSession(http, live_platform.endpoint(web=0))
        with anyio.fail_after(TEST_DEADLINE):
            await on_a.initialize(capabilities={"elicitation": {"form": {}}})
            on_b = on_a.joined(live_platform.endpoint(web=1))
            call_id = on_a.next_id()
            call = request_message(
                call_id, "tools/call", {"name": "test_elicitation", "arguments": {"message": "Which process?"}}
            )
            elicitations = []
            async with on_a.stream_post(call) as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
                async for event in sse_events(stream):
                    message = event.message()
                    if message is None:
                        continue
                    if message.get("method") == "elicitation/create":
                        elicitations.append(message)
                        answer = {
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "result": {"action": "accept", "content": {"response": "answered on B"}},
                        }
                        posted = await on_b.post(answer)
                        assert posted.status_code == 202, posted.text
                    elif message.get("id") == call_id:
                        break
    (elicitation,) = elicitations
    assert elicitation["params"]["message"] == "Which process?"
    assert message["result"]["content"] == [
        {"type": "text", "text": 'User response: action=accept, content={"response":"answered on B"}'}
    ]


async def test_stream_dropped_on_a_resumes_on_b(live_platform: LiveServer) -> None:
    async with raw_http_client() as http:
        on_a = RawSession(http, live_platform.endpoint(web=0))
        with anyio.fail_after(TEST_DEADLINE):
            await on_a.initialize()
            call_id = on_a.next_id()
            call = request_message(
                call_id,
                "tools/call",
                {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "a-to-b"}},
            )
            before = await post_until_first_progress(on_a, call)
            last_seen = before[-1].id
            assert last_seen is not None
            after = await resume_until_response(on_a.joined(live_platform.endpoint(web=1)), last_seen, call_id)
    messages = [m for m in (e.message() for e in before + after) if m is not None]
    assert [m["params"]["progress"] for m in messages if is_progress(m)] == [0, 50, 100]
    assert messages[-1]["id"] == call_id
    assert messages[-1]["result"]["content"]


async def test_subscription_made_on_b_brings_updates_to_the_stream_on_a(live_platform: LiveServer) -> None:
    uri = "test://watched"
    slug = await live_platform.atenant_create(
        "watch",
        f"services.resource_create(tenant=tenant, uri={uri!r}, name='watched', text='v1', mime_type='text/plain')",
    )
    update = in_tenant(
        slug, f"services.resource_update(resource=tenant.resources.get(uri={uri!r}), data={{'text': 'v2'}})"
    )
    async with raw_http_client() as http:
        on_a = RawSession(http, live_platform.endpoint(slug, web=0))
        with anyio.fail_after(TEST_DEADLINE):
            await on_a.initialize()
            on_b = on_a.joined(live_platform.endpoint(slug, web=1))
            async with on_a.stream_get() as stream:
                assert stream.status_code == 200
                events = sse_events(stream)
                await anext(events)  # the priming event: the stream is listening
                subscribed = await on_b.call("resources/subscribe", {"uri": uri})
                assert subscribed["result"] == {}
                await live_platform.amanage("shell", "-c", update)
                message = await next_message(events)
            read = await on_b.call("resources/read", {"uri": uri})
    assert message["method"] == "notifications/resources/updated", message
    assert message["params"]["uri"] == uri
    assert read["result"]["contents"][0]["text"] == "v2"


async def test_a_listen_stream_on_a_hears_of_a_tool_created_by_another_process(live_platform: LiveServer) -> None:
    """2026-07-28: no session at all; the change is committed by a ``manage.py shell`` process and reaches the
    web process holding the stream through the tenant's catalog group on Redis."""
    slug = await live_platform.atenant_create("listen")
    create_tool = in_tenant(slug, CREATE_FRESH_TOOL)
    listen = stateless_request("listen-1", "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    headers = stateless_headers("subscriptions/listen")
    async with raw_http_client() as http:
        with anyio.fail_after(TEST_DEADLINE):
            async with http.stream("POST", live_platform.endpoint(slug, web=0), json=listen, headers=headers) as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
                events = sse_events(stream)
                ack = await next_message(events)
                assert ack["method"] == "notifications/subscriptions/acknowledged"
                assert ack["params"]["notifications"] == {"toolsListChanged": True}

                await live_platform.amanage("shell", "-c", create_tool)
                message = await next_message(events)
    assert message == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}},
    }


# A signal between processes travels within milliseconds; SESSION_CACHE_TTL (5 s) bounds a lost one. Deadlines
# below the TTL show that the signal, not the expiry of B's copy, did it.
SIGNAL_DEADLINE = 3.0


async def test_session_ended_on_a_is_gone_on_b_and_its_stream_on_b_ends(live_platform: LiveServer) -> None:
    async with raw_http_client() as http:
        on_a = RawSession(http, live_platform.endpoint(web=0))
        with anyio.fail_after(TEST_DEADLINE):
            await on_a.initialize()
            on_b = on_a.joined(live_platform.endpoint(web=1))
            listed = await on_b.call("tools/list")
            assert "result" in listed, "B now remembers the session"
            async with on_b.stream_get() as stream:
                assert stream.status_code == 200
                events = sse_events(stream)
                await anext(events)  # the priming event: the stream is open
                ended = await on_a.http.delete(on_a.url, headers=on_a.headers())
                assert ended.status_code == 200, ended.text
                with anyio.fail_after(SIGNAL_DEADLINE):
                    async for _ in events:
                        pass  # anything left, then the end of the stream
            # web-b is two processes on one port: the other one hears the end by the same signal.
            with anyio.fail_after(SIGNAL_DEADLINE):
                while (await on_b.post(request_message(on_b.next_id(), "tools/list"))).status_code != 404:
                    pass


async def test_cancellation_sent_to_b_stops_the_call_running_on_a(live_platform: LiveServer) -> None:
    async with raw_http_client() as http:
        on_a = RawSession(http, live_platform.endpoint(web=0))
        with anyio.fail_after(TEST_DEADLINE):
            await on_a.initialize(capabilities={"elicitation": {"form": {}}})
            on_b = on_a.joined(live_platform.endpoint(web=1))
            call_id = on_a.next_id()
            call = request_message(call_id, "tools/call", {"name": "test_elicitation", "arguments": {"message": "?"}})
            seen: list[dict[str, object]] = []
            async with on_a.stream_post(call) as stream:
                assert stream.status_code == 200
                events = sse_events(stream)
                async for event in events:
                    message = event.message()
                    if message is not None:
                        seen.append(message)
                    if message is not None and message.get("method") == "elicitation/create":
                        break
                # The tool now waits for an answer that never comes; B relays the cancellation to A.
                cancelled = await on_b.post(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": call_id, "reason": "changed my mind"},
                    }
                )
                assert cancelled.status_code == 202, cancelled.text
                with anyio.fail_after(SIGNAL_DEADLINE):
                    seen.extend(m for m in [e.message() async for e in events] if m is not None)
    assert [m.get("method") for m in seen] == ["elicitation/create"], "cancelled: no response, nothing more"
