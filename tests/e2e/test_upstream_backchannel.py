"""Upstream tools that ask while they run, and the upstream's cache hints, end to end: SDK upstream processes (one
that offers 2026-07-28, one that refuses it), a platform process, and the SDK client downstream in both eras.

A tool that asks imperatively (``ctx.elicit``, ``ctx.session.create_message``) needs a server-to-client request,
which only a session carries: in automatic mode the platform notices the upstream's refusal on 2026-07-28 and calls
that tool in a handshake session from then on (repeating the call at once only when the tool says that is safe).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client

from tests.e2e.live import LiveServer, in_tenant
from tests.e2e.test_upstream_federation import ERAS, downstream, text_of
from tests.e2e.upstreams import UpstreamServer, federation_platform, upstream_server

pytestmark = pytest.mark.anyio

TEST_DEADLINE = 90.0


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, UpstreamServer, UpstreamServer]]:
    tmp = tmp_path_factory.mktemp("backchannel")
    with ExitStack() as stack:
        modern = upstream_server(stack, tmp / "upstream-modern")
        handshake = upstream_server(stack, tmp / "upstream-handshake", handshake_only=True)
        yield federation_platform(stack, tmp / "platform"), modern, handshake


@pytest.fixture(scope="module")
def platform(federation: tuple[LiveServer, UpstreamServer, UpstreamServer]) -> LiveServer:
    return federation[0]


@pytest.fixture(scope="module")
def sdk_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A platform whose upstream requests all go through the SDK client (no lean path)."""
    with ExitStack() as stack:
        yield federation_platform(stack, tmp_path_factory.mktemp("sdk-platform"), MCP_UPSTREAM_LEAN_CALLS="false")


@pytest.fixture(scope="module")
def list_hinting_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamServer]:
    """A 2026-07-28 upstream whose lists may be cached for 30 s, by anyone."""
    with ExitStack() as stack:
        yield upstream_server(stack, tmp_path_factory.mktemp("upstream-list-hints"), list_cache="30000:public")


@pytest.fixture(scope="module")
def handshake_upstream(federation: tuple[LiveServer, UpstreamServer, UpstreamServer]) -> UpstreamServer:
    return federation[2]


async def tenant_with(platform: LiveServer, upstream: UpstreamServer, *options: str) -> str:
    slug = await platform.atenant_create("bc")
    await platform.amanage("upstream_add", slug, "up", upstream.url, *options)
    return slug


@pytest.fixture
async def tenant(platform: LiveServer, federation: tuple[LiveServer, UpstreamServer, UpstreamServer]) -> str:
    """A fresh tenant with the 2026-07-28 upstream added in automatic mode."""
    return await tenant_with(platform, federation[1])


class Answerer:
    """The downstream client's callbacks, recording what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def on_elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        if isinstance(params, types.ElicitRequestURLParams):
            self.asked.append("url")
            return types.ElicitResult(action="accept")
        self.asked.append("elicit")
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.asked.append("sample")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Autumn wind"), model="test-model"
        )

    async def on_roots(self, context: Any) -> types.ListRootsResult:
        self.asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])

    def client(self, platform: LiveServer, slug: str, era: str) -> Client:
        return downstream(
            platform,
            slug,
            era,
            elicitation_callback=self.on_elicit,
            sampling_callback=self.on_sample,
            list_roots_callback=self.on_roots,
        )


async def answers_received(client: Client) -> list[str]:
    return text_of(await client.call_tool("up_answers_received", {})).split()


async def session_tools(platform: LiveServer, slug: str) -> str:
    output = await platform.amanage("shell", "-c", in_tenant(slug, "print(tenant.upstreams.get().session_tools)"))
    return output.strip().splitlines()[-1]


# ---- tools that ask imperatively ------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_read_only_tool_that_samples_imperatively_is_moved_to_a_session_and_is_not_repeated_behind_the_user(
    platform: LiveServer, tenant: str, era: str
) -> None:
    answerer = Answerer()
    label = f"{era}-{secrets.token_hex(3)}"
    with anyio.fail_after(TEST_DEADLINE):
        async with answerer.client(platform, tenant, era) as client:
            first = await client.call_tool("up_haiku_now", {"topic": label})
            assert first.is_error and "call it again" in text_of(first), text_of(first)
            assert text_of(await client.call_tool("up_haiku_now", {"topic": f"{label}-2"})) == "Autumn wind"
            received = await answers_received(client)
    assert answerer.asked == ["sample"]
    assert received.count(f"haiku_now:{label}-2") == 1, received
    assert await session_tools(platform, tenant) == "['haiku_now']"


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_that_elicits_imperatively_fails_once_saying_it_needs_a_session_then_works(
    platform: LiveServer, tenant: str, era: str
) -> None:
    answerer = Answerer()
    first_label, second_label = f"{era}-first-{secrets.token_hex(3)}", f"{era}-second-{secrets.token_hex(3)}"
    with anyio.fail_after(TEST_DEADLINE):
        async with answerer.client(platform, tenant, era) as client:
            # Not marked read-only or idempotent: what it did before asking may not be repeated behind the user.
            first = await client.call_tool("up_ask_name_now", {"label": first_label})
            assert first.is_error
            assert "session" in text_of(first) and "call it again" in text_of(first), text_of(first)
            second = await client.call_tool("up_ask_name_now", {"label": second_label})
            assert text_of(second) == "hello Ada", text_of(second)
            received = await answers_received(client)
    assert answerer.asked == ["elicit"]
    assert received.count(f"started:{first_label}") == 1, received
    assert received.count(f"{second_label}:accept") == 1, received
    assert await session_tools(platform, tenant) == "['ask_name_now']"


async def test_tools_that_do_not_ask_stay_on_the_stateless_connection(platform: LiveServer, tenant: str) -> None:
    answerer = Answerer()
    with anyio.fail_after(TEST_DEADLINE):
        async with answerer.client(platform, tenant, "2026-07-28") as client:
            await client.call_tool("up_haiku_now", {"topic": "moved"})
            # The upstream's 2026-07-28 requests carry the client's capabilities in _meta; a session's do not.
            declared = text_of(await client.call_tool("up_call_capabilities", {}))
    assert declared != "null" and "sampling" in declared, declared
    assert await session_tools(platform, tenant) == "['haiku_now']"


async def test_an_upstream_in_session_mode_serves_imperative_questions_from_the_first_call(
    platform: LiveServer, federation: tuple[LiveServer, UpstreamServer, UpstreamServer]
) -> None:
    slug = await tenant_with(platform, federation[1], "--session-mode", "session")
    answerer = Answerer()
    with anyio.fail_after(TEST_DEADLINE):
        async with answerer.client(platform, slug, "2026-07-28") as client:
            assert text_of(await client.call_tool("up_ask_name_now", {"label": "session"})) == "hello Ada"
            assert text_of(await client.call_tool("up_call_capabilities", {})) == "null"
    assert answerer.asked == ["elicit"]


async def test_a_question_sent_at_once_by_a_session_whose_stream_opens_late_is_heard(
    platform: LiveServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A handshake-era server sends a tool's imperative question on the session's GET stream, which the SDK client
    # opens beside the first call: calls wait until the upstream answered that GET, or the question is lost and the
    # call waits for an answer nobody was asked for.
    with ExitStack() as stack:
        late = upstream_server(stack, tmp_path_factory.mktemp("upstream-late-stream"), slow_get_stream_ms=1500)
        slug = await tenant_with(platform, late, "--session-mode", "session")
        answerer = Answerer()
        with anyio.fail_after(TEST_DEADLINE):
            async with answerer.client(platform, slug, "2026-07-28") as client:
                assert text_of(await client.call_tool("up_haiku_now", {"topic": "late"})) == "Autumn wind"
    assert answerer.asked == ["sample"]


async def test_an_upstream_in_stateless_mode_is_never_moved_to_a_session(
    platform: LiveServer, federation: tuple[LiveServer, UpstreamServer, UpstreamServer]
) -> None:
    slug = await tenant_with(platform, federation[1], "--session-mode", "stateless")
    with anyio.fail_after(TEST_DEADLINE):
        async with Answerer().client(platform, slug, "2026-07-28") as client:
            for _ in range(2):
                refused = await client.call_tool("up_haiku_now", {"topic": "stateless"})
                assert refused.is_error and "back-channel" in text_of(refused), text_of(refused)
    assert await session_tools(platform, slug) == "[]"


# ---- URL-mode elicitation and roots from a handshake-era upstream ------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_handshake_upstreams_url_elicitation_is_answered_once_in_both_eras(
    platform: LiveServer, handshake_upstream: UpstreamServer, era: str
) -> None:
    slug = await tenant_with(platform, handshake_upstream)
    answerer = Answerer()
    label = f"{era}-{secrets.token_hex(3)}"
    with anyio.fail_after(TEST_DEADLINE):
        async with answerer.client(platform, slug, era) as client:
            assert text_of(await client.call_tool("up_connect_account", {"label": label})) == "connect: accept"
            received = await answers_received(client)
    assert answerer.asked == ["url"]
    assert received.count(f"url:{label}:accept") == 1, received


@pytest.mark.parametrize(("path", "era"), [("lean", "legacy"), ("sdk", "legacy"), ("lean", "2026-07-28")])
async def test_a_handshake_upstreams_url_elicitation_completion_reaches_a_client_whose_era_has_it(
    platform: LiveServer, sdk_platform: LiveServer, handshake_upstream: UpstreamServer, path: str, era: str
) -> None:
    platform = platform if path == "lean" else sdk_platform
    slug = await tenant_with(platform, handshake_upstream)
    answerer = Answerer()
    completed: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            completed.append(message.params.elicitation_id)

    label = f"{path}-{era}-{secrets.token_hex(3)}"
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(
            platform, slug, era, elicitation_callback=answerer.on_elicit, message_handler=on_message
        ) as client:
            elicitation_id = text_of(await client.call_tool("up_connect_and_confirm", {"label": label}))
    assert answerer.asked == ["url"] and elicitation_id.startswith(label)
    # The 2026-07-28 era has no such notice: its client retried with the answer, and the call's result is the end.
    assert completed == ([elicitation_id] if era == "legacy" else [])


@pytest.mark.parametrize("path", ["lean", "sdk"])
async def test_a_handshake_upstreams_roots_request_answered_by_retry_leaves_no_error_on_the_upstream(
    platform: LiveServer, sdk_platform: LiveServer, handshake_upstream: UpstreamServer, path: str
) -> None:
    platform = platform if path == "lean" else sdk_platform
    slug = await tenant_with(platform, handshake_upstream)
    answerer = Answerer()
    assert handshake_upstream.process is not None
    log = handshake_upstream.process.stderr_path
    before = len(log.read_text(errors="replace"))
    with anyio.fail_after(TEST_DEADLINE):
        async with answerer.client(platform, slug, "2026-07-28") as client:
            assert text_of(await client.call_tool("up_roots", {"label": path})) == "file:///work/project"
            assert text_of(await client.call_tool("up_roots_now", {"label": path})) == "file:///work/project"
            # A call after them: the upstream has handled everything their first rounds left behind.
            received = await answers_received(client)
    assert answerer.asked == ["roots", "roots"]
    # The first round ended by cancellation, not by an error answer the upstream's tool would fail (and log) on.
    assert f"roots_failed:{path}" not in received and received.count(f"roots_now:{path}") == 1, received
    written = log.read_text(errors="replace")[before:]
    assert "Internal Server Error" not in written and "Traceback" not in written, written


# ---- cache hints ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["modern", "handshake"])
async def test_a_read_through_the_platform_promises_no_longer_life_than_the_upstream(
    platform: LiveServer, federation: tuple[LiveServer, UpstreamServer, UpstreamServer], which: str
) -> None:
    slug = await tenant_with(platform, federation[1] if which == "modern" else federation[2])
    values = []
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(platform.endpoint(slug), read_timeout_seconds=30.0) as client:  # with the SDK's cache
            for _ in range(3):
                read = await client.read_resource("notes://clock")
                # The upstream says ttlMs 0 (the SDK's default) or, in the handshake era, nothing at all.
                assert read.ttl_ms == 0 and read.cache_scope == "private", (read.ttl_ms, read.cache_scope)
                values.append(read.contents[0].text if isinstance(read.contents[0], types.TextResourceContents) else "")
    assert len(set(values)) == 3, values


LIST_HINTS = {
    # The upstream (the SDK's defaults: ttlMs 0, private) and the tenant (60 s, public): the upstream's.
    "immediately stale": ("modern", (60_000, "public"), (0, "private")),
    # The upstream allows 30 s to anyone, the tenant 60 s to the caller only: the shorter life, the private scope.
    "shorter and public": ("list-hinting", (60_000, "private"), (30_000, "private")),
    # A handshake-era upstream gives its lists no hints: the tenant's own apply.
    "no hints": ("handshake", (60_000, "public"), (60_000, "public")),
}


@pytest.mark.parametrize("case", list(LIST_HINTS))
async def test_lists_through_the_platform_promise_no_longer_life_nor_wider_scope_than_the_upstream(
    platform: LiveServer,
    federation: tuple[LiveServer, UpstreamServer, UpstreamServer],
    list_hinting_upstream: UpstreamServer,
    case: str,
) -> None:
    which, (ttl_ms, scope), expected = LIST_HINTS[case]
    upstream = {"modern": federation[1], "list-hinting": list_hinting_upstream, "handshake": federation[2]}[which]
    slug = await tenant_with(platform, upstream)
    update = f"services.tenant_update(tenant=tenant, data={{'cache_ttl_ms': {ttl_ms}, 'cache_scope': {scope!r}}})"
    await platform.amanage("shell", "-c", in_tenant(slug, update))
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(platform.endpoint(slug), read_timeout_seconds=30.0) as client:
            lists = [
                await client.list_tools(cache_mode="bypass"),
                await client.list_resources(cache_mode="bypass"),
                await client.list_resource_templates(cache_mode="bypass"),
                await client.list_prompts(cache_mode="bypass"),
            ]
            discovered = client.session.discover_result
    assert len(lists[0].tools) > 0 and len(lists[3].prompts) > 0
    assert [(listed.ttl_ms, listed.cache_scope) for listed in lists] == [expected] * 4
    # A result no upstream contributes to keeps the tenant's hints.
    assert discovered is not None and (discovered.ttl_ms, discovered.cache_scope) == (ttl_ms, scope)
