"""Upstream MCP servers federated into a tenant, end to end: real SDK upstream processes (Streamable HTTP and
2024-11-05 HTTP+SSE), a platform process, ``manage.py upstream_add``, and the SDK client downstream in both eras."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_core.errors import MISSING_CLIENT_CAPABILITY
from tests.e2e.live import PYTHON, REPO, LiveServer, in_tenant
from tests.e2e.sdk_tasks import TasksClient
from tests.e2e.upstreams import CIRCUIT_COOLDOWN_SECONDS, UpstreamServer, platform_and_upstreams, upstream_server

pytestmark = pytest.mark.anyio

REQUEST_TIMEOUT = 30.0
TEST_DEADLINE = 90.0
ERAS = ["legacy", "2026-07-28"]


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, UpstreamServer, UpstreamServer]]:
    yield from platform_and_upstreams(tmp_path_factory.mktemp("federation"))


@pytest.fixture(scope="module")
def platform(federation: tuple[LiveServer, UpstreamServer, UpstreamServer]) -> LiveServer:
    return federation[0]


@pytest.fixture(scope="module")
def upstream(federation: tuple[LiveServer, UpstreamServer, UpstreamServer]) -> UpstreamServer:
    return federation[1]


@pytest.fixture(scope="module")
def legacy_upstream(federation: tuple[LiveServer, UpstreamServer, UpstreamServer]) -> UpstreamServer:
    return federation[2]


@pytest.fixture
async def tenant(platform: LiveServer, upstream: UpstreamServer) -> str:
    """A fresh tenant with the Streamable HTTP upstream added as ``up`` (so its items are ``up_*``)."""
    slug = await platform.atenant_create("fed")
    output = await platform.amanage("upstream_add", slug, "up", upstream.url)
    assert "(streamable-http, 2026-07-28)" in output, output
    return slug


def downstream(platform: LiveServer, slug: str, era: str, **options: Any) -> Client:
    """The SDK client against the tenant: ``legacy`` (initialize handshake) or pinned to 2026-07-28 via discover."""
    mode = "legacy" if era == "legacy" else "auto"
    return Client(platform.endpoint(slug), mode=mode, cache=None, read_timeout_seconds=REQUEST_TIMEOUT, **options)


def text_of(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def eventually(check: Any, *, timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll ``await check()`` until it returns something truthy (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout}s (last: {value!r})")
        await anyio.sleep(0.1)


# ---- adding and mirroring ----------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_added_upstream_items_are_served_under_the_prefix(platform: LiveServer, tenant: str, era: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, tenant, era) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"up_echo", "up_slow_count", "up_weather", "up_fail", "up_grow"} <= set(tools)
            assert tools["up_echo"].description == "Say the text back."
            assert tools["up_weather"].output_schema is not None
            resources = [r.uri for r in (await client.list_resources()).resources]
            assert resources == ["notes://clock", "notes://readme"]
            templates = [t.name for t in (await client.list_resource_templates()).resource_templates]
            assert templates == ["up_topic_note"]
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            assert prompts == ["up_greet"]

            assert text_of(await client.call_tool("up_echo", {"text": "hi"})) == "echo: hi"
            readme = await client.read_resource("notes://readme")
            assert [c.text for c in readme.contents if isinstance(c, types.TextResourceContents)] == ["read me first"]
            note = await client.read_resource("notes://topics/otters")
            assert [c.text for c in note.contents if isinstance(c, types.TextResourceContents)] == ["a note on otters"]
            prompt = await client.get_prompt("up_greet", {"name": "Ada"})
            assert isinstance(prompt.messages[0].content, types.TextContent)
            assert prompt.messages[0].content.text == "Please greet Ada."


async def test_upstream_add_of_an_unreachable_server_fails_clearly_and_stores_nothing(platform: LiveServer) -> None:
    slug = await platform.atenant_create("dead")
    dead_url = "http://127.0.0.1:9/mcp"
    argv = [str(PYTHON), "manage.py", "upstream_add", slug, "gone", dead_url]
    done = await anyio.run_process(argv, cwd=REPO, env=platform.command_env, check=False)
    assert done.returncode != 0
    error = done.stderr.decode()
    assert "upstream 'gone' was not added" in error and "ConnectError" in error, error
    counts = await platform.amanage(
        "shell", "-c", in_tenant(slug, "print(tenant.upstreams.count(), tenant.tools.count())")
    )
    assert counts.strip().splitlines()[-1].split() == ["0", "0"]


async def test_an_sse_only_upstream_is_reached_over_http_sse(
    platform: LiveServer, legacy_upstream: UpstreamServer
) -> None:
    slug = await platform.atenant_create("legacy")
    output = await platform.amanage("upstream_add", slug, "old", legacy_upstream.url, "--prefix", "old.")
    assert "'sse'" not in output and "(sse," in output, output
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, slug, "legacy") as client:
            assert text_of(await client.call_tool("old.echo", {"text": "over sse"})) == "echo: over sse"


# ---- proxying ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_progress_and_logs_of_the_upstream_reach_the_downstream_client(
    platform: LiveServer, tenant: str, era: str
) -> None:
    logs: list[Any] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, tenant, era, logging_callback=on_log, log_level="debug") as client:
            result = await client.call_tool("up_slow_count", {"steps": 3}, progress_callback=on_progress)
    assert text_of(result) == "counted to 3"
    assert progress == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]
    assert logs == ["counted 1", "counted 2", "counted 3"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # the handshake's setLevel
async def test_the_upstream_is_asked_for_progress_and_logs_only_as_the_downstream_client_asked(
    platform: LiveServer, tenant: str, era: str
) -> None:
    # The upstream (2026-07-28) reports what the call's _meta asked for. A handshake-era downstream session without
    # a level takes every log message; a 2026-07-28 request without one takes none.
    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        pass

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        pass

    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, tenant, era) as client:
            plain = json.loads(text_of(await client.call_tool("up_call_meta", {})))
        async with downstream(platform, tenant, era, logging_callback=on_log, log_level="warning") as client:
            if era == "legacy":  # the handshake era sets the session's level by request
                await client.session.set_logging_level("warning")  # type: ignore[attr-defined]  # deprecated
            asked = json.loads(text_of(await client.call_tool("up_call_meta", {}, progress_callback=on_progress)))
    assert plain == {"progressToken": None, "logLevel": "debug" if era == "legacy" else None}
    assert asked["progressToken"] is not None
    assert asked["logLevel"] == "warning"


async def test_a_2024_11_05_client_of_the_platform_gets_the_upstreams_progress(
    platform: LiveServer, tenant: str
) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with anyio.fail_after(TEST_DEADLINE):
        async with Client(sse_client(platform.sse_endpoint(tenant)), mode="legacy", cache=None) as client:
            result = await client.call_tool("up_slow_count", {"steps": 2}, progress_callback=on_progress)
    assert text_of(result) == "counted to 2"
    assert progress == [1.0, 2.0]


async def test_structured_content_and_errors_pass_through(platform: LiveServer, tenant: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, tenant, "2026-07-28") as client:
            weather = await client.call_tool("up_weather", {"city": "Oslo"})
            assert weather.structured_content == {"city": "Oslo", "celsius": 21.5}
            assert not weather.is_error
            failed = await client.call_tool("up_fail", {})
            assert failed.is_error
            assert "fail" in text_of(failed)


@pytest.mark.parametrize("era", ERAS)
async def test_cancelling_the_downstream_call_cancels_the_upstream_call(
    platform: LiveServer, tenant: str, era: str
) -> None:
    label = f"cancel-{secrets.token_hex(3)}"
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, tenant, era) as client:
            with anyio.move_on_after(1.0):
                await client.call_tool("up_wait_forever", {"label": label})

            async def cancelled() -> bool:
                return label in text_of(await client.call_tool("up_cancelled_calls", {}))

            await eventually(cancelled, what="the upstream call's cancellation")


async def test_the_downstream_token_is_never_forwarded_upstream(platform: LiveServer, tenant: str) -> None:
    token = f"downstream-{secrets.token_hex(8)}"
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    with anyio.fail_after(TEST_DEADLINE):
        async with http, Client(streamable_http_client(platform.endpoint(tenant), http_client=http), cache=None) as c:
            assert text_of(await c.call_tool("up_echo", {"text": "x"})) == "echo: x"
            seen = text_of(await c.call_tool("up_seen_authorization", {}))
    assert token not in seen


async def test_a_bearer_secret_authenticates_the_platform_and_the_downstream_token_stays_behind(
    platform: LiveServer, upstream: UpstreamServer
) -> None:
    slug = await platform.atenant_create("authed")
    value = f"upstream-{secrets.token_hex(8)}"
    stored = await anyio.run_process(
        [str(PYTHON), "manage.py", "secret_set", slug, "up-token"],
        cwd=REPO,
        env=platform.command_env,
        input=value.encode(),
        check=False,
    )
    assert stored.returncode == 0, stored.stderr.decode()
    await platform.amanage("upstream_add", slug, "up", upstream.url, "--bearer-secret", "up-token")
    token = f"downstream-{secrets.token_hex(8)}"
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    with anyio.fail_after(TEST_DEADLINE):
        async with http, Client(streamable_http_client(platform.endpoint(slug), http_client=http), cache=None) as c:
            seen = text_of(await c.call_tool("up_seen_authorization", {}))
    assert f"Bearer {value}" in seen
    assert token not in seen
    shown = await platform.amanage("shell", "-c", in_tenant(slug, "u = tenant.upstreams.get(); print(u.auth)"))
    assert value not in shown


async def test_the_outbound_door_refuses_a_loopback_upstream_unless_allowed(
    platform: LiveServer, upstream: UpstreamServer
) -> None:
    slug = await platform.atenant_create("strict")
    argv = [str(PYTHON), "manage.py", "upstream_add", slug, "local", upstream.url]
    strict_env = {**platform.command_env, "MCP_OUTBOUND_ALLOWED_NETWORKS": ""}
    done = await anyio.run_process(argv, cwd=REPO, env=strict_env, check=False)
    assert done.returncode != 0
    error = done.stderr.decode()
    assert "refused: 127.0.0.1" in error and "not an allowed network" in error, error
    counts = await platform.amanage("shell", "-c", in_tenant(slug, "print(tenant.upstreams.count())"))
    assert counts.strip().splitlines()[-1] == "0"


# ---- keeping the mirror up to date ---------------------------------------------------------------------------


async def test_an_upstream_list_change_reaches_downstream_clients(platform: LiveServer, tenant: str) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    name = f"grown_{secrets.token_hex(3)}"
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, tenant, "legacy", message_handler=on_message) as client:
            await client.call_tool("up_grow", {"name": name})
            await changed.wait()

            async def listed() -> bool:
                return f"up_{name}" in {tool.name for tool in (await client.list_tools()).tools}

            await eventually(listed, what="the grown tool in the downstream list")
            assert text_of(await client.call_tool(f"up_{name}", {})) == f"I am {name}"


async def test_admin_changes_to_mirrored_items_survive_a_refresh(platform: LiveServer, tenant: str) -> None:
    await platform.amanage(
        "shell",
        "-c",
        in_tenant(
            tenant,
            "echo = tenant.tools.get(name='up_echo'); services.tool_update(tool=echo, data={'enabled': False}); "
            "weather = tenant.tools.get(name='up_weather'); "
            "services.tool_update(tool=weather, data={'name': 'forecast', 'description': 'Ours.'}); "
            "greet = tenant.prompts.get(name='up_greet'); services.prompt_update(prompt=greet, data={'title': 'Hi'})",
        ),
    )
    output = await platform.amanage("upstream_refresh", tenant, "up")
    assert "up:" in output, output
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, tenant, "2026-07-28") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert "up_echo" not in tools and "up_weather" not in tools
            assert tools["forecast"].description == "Ours."
            assert (await client.call_tool("forecast", {"city": "Rome"})).structured_content == {
                "city": "Rome",
                "celsius": 21.5,
            }
            prompts = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
            assert prompts["up_greet"].title == "Hi"


# ---- health ----------------------------------------------------------------------------------------------


@pytest.fixture
async def own_upstream(tmp_path: Path) -> AsyncIterator[UpstreamServer]:
    from contextlib import ExitStack

    with ExitStack() as stack:
        yield upstream_server(stack, tmp_path / "own")


async def test_a_dead_upstream_fails_fast_with_a_clear_error_then_recovers(
    platform: LiveServer, own_upstream: UpstreamServer
) -> None:
    slug = await platform.atenant_create("health")
    await platform.amanage("upstream_add", slug, "flaky", own_upstream.url)
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, slug, "2026-07-28") as client:
            assert text_of(await client.call_tool("flaky_echo", {"text": "up"})) == "echo: up"
            own_upstream.kill()

            async def circuit_open() -> str:
                result = await client.call_tool("flaky_echo", {"text": "down"})
                assert result.is_error, result
                return text_of(result) if "unavailable" in text_of(result) else ""

            message = await eventually(circuit_open, what="the circuit to open")
            assert "'flaky'" in message and "last error" in message
            started = time.monotonic()
            fast = await client.call_tool("flaky_echo", {"text": "down"})
            assert fast.is_error and time.monotonic() - started < 0.5

            health = await platform.amanage(
                "shell",
                "-c",
                in_tenant(slug, "u = tenant.upstreams.get(); print(u.consecutive_failures, u.last_error)"),
            )
            failures, error = health.strip().splitlines()[-1].split(" ", 1)
            assert int(failures) >= 2 and error.strip(), health

            own_upstream.start()

            async def recovered() -> bool:
                result = await client.call_tool("flaky_echo", {"text": "again"})
                return not result.is_error and text_of(result) == "echo: again"

            await eventually(recovered, timeout=10 * CIRCUIT_COOLDOWN_SECONDS + 10, what="recovery after restart")


# ---- the upstream's questions --------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_an_upstream_elicitation_is_answered_once_by_the_downstream_user(
    platform: LiveServer, tenant: str, era: str
) -> None:
    asked: list[str] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    label = f"{era}-{secrets.token_hex(3)}"
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, tenant, era, elicitation_callback=on_elicit) as client:
            result = await client.call_tool("up_ask_name", {"label": label})
            assert text_of(result) == "hello Ada", result
            received = text_of(await client.call_tool("up_answers_received", {}))
    assert asked == ["What is your name?"]
    assert received.count(f"{label}:accept") == 1, received


@pytest.mark.parametrize("era", ERAS)
async def test_an_upstream_needing_a_capability_the_client_lacks_answers_as_a_tool_of_the_platform_would(
    platform: LiveServer, tenant: str, era: str
) -> None:
    # The upstream is told only what the downstream client declared (no elicitation here), so it refuses instead of
    # asking: a 2026-07-28 client gets -32021 with the capability it lacks, a handshake-era client a failed tool.
    label = f"{era}-{secrets.token_hex(3)}"
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, tenant, era) as client:
            if era == "legacy":
                result = await client.call_tool("up_ask_name", {"label": label})
                assert result.is_error, result
                assert "elicitation" in text_of(result)
            else:
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("up_ask_name", {"label": label})
                assert refused.value.error.code == MISSING_CLIENT_CAPABILITY
                assert "elicitation" in json.dumps(refused.value.error.data)
            received = text_of(await client.call_tool("up_answers_received", {}))
    assert label not in received


async def test_upstream_sampling_and_roots_requests_reach_a_handshake_client(platform: LiveServer, tenant: str) -> None:
    async def on_sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Autumn wind"), model="test-model"
        )

    async def on_roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])

    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(
            platform, tenant, "legacy", sampling_callback=on_sample, list_roots_callback=on_roots
        ) as client:
            assert text_of(await client.call_tool("up_haiku", {"topic": "otters"})) == "Autumn wind"
            assert text_of(await client.call_tool("up_roots", {})) == "file:///work/project"


# ---- our own platform as the upstream ------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_tenant_of_this_platform_serves_as_another_tenants_upstream(platform: LiveServer, era: str) -> None:
    await platform.amanage("load_demo_tenant")
    slug = await platform.atenant_create("federated")
    output = await platform.amanage("upstream_add", slug, "demo", platform.endpoint("demo"))
    assert "streamable-http" in output, output
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, slug, era, elicitation_callback=on_elicit) as client:
            added = await client.call_tool("demo_add", {"a": 2, "b": 3})
            assert added.structured_content == {"sum": 5}
            counted = await client.call_tool(
                "demo_count_slowly", {"steps": 3, "delay_ms": 10}, progress_callback=on_progress
            )
            assert text_of(counted) == "Counted to 3."
            assert text_of(await client.call_tool("demo_ask_user_name", {})) == "Hello, Grace!"
            greeting = await client.read_resource("demo://greeting/Ada")
            assert "Hello, Ada!" in str(greeting.contents[0])
    assert progress == [1.0, 2.0, 3.0]


# ---- tasks ---------------------------------------------------------------------------------------------------


async def test_an_upstream_tool_marked_for_tasks_runs_as_a_task_on_the_worker(
    platform: LiveServer, tenant: str
) -> None:
    await platform.amanage(
        "shell",
        "-c",
        in_tenant(
            tenant,
            "services.tool_update(tool=tenant.tools.get(name='up_slow_count'), data={'task_support': 'required'})",
        ),
    )
    tasks = TasksClient()
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(
            platform.endpoint(tenant), cache=None, read_timeout_seconds=REQUEST_TIMEOUT, extensions=[tasks]
        ) as client:
            result = await client.call_tool("up_slow_count", {"steps": 2})
    assert text_of(result) == "counted to 2"
    (created,) = tasks.created
    assert created.status == "working" and tasks.statuses[-1] == "completed"
    # A refresh keeps what the admin chose.
    await platform.amanage("upstream_refresh", tenant, "up")
    kept = await platform.amanage(
        "shell", "-c", in_tenant(tenant, "print(tenant.tools.get(name='up_slow_count').task_support)")
    )
    assert kept.strip().splitlines()[-1] == "required"
