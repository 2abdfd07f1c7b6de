"""What a handshake-era upstream sends while it serves a call, relayed end to end: an SDK upstream that refuses the
2026-07-28 era, so the platform holds a 2025-11-25 session with it and the upstream's questions arrive as
server-to-client requests; downstream, a 2025-11-25 session (questions as server-to-client requests) and a
2026-07-28 client (questions as input_required, the upstream call replayed) each answer every question once."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client

from tests.e2e.live import LiveServer
from tests.e2e.test_upstream_federation import ERAS, downstream, eventually, text_of
from tests.e2e.upstreams import UpstreamServer, federation_platform, upstream_server

pytestmark = pytest.mark.anyio

TEST_DEADLINE = 90.0


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, UpstreamServer]]:
    tmp = tmp_path_factory.mktemp("handshake-upstream")
    with ExitStack() as stack:
        upstream = upstream_server(stack, tmp / "upstream", handshake_only=True)
        yield federation_platform(stack, tmp / "platform"), upstream


@pytest.fixture
async def tenant(federation: tuple[LiveServer, UpstreamServer]) -> str:
    platform, upstream = federation
    slug = await platform.atenant_create("hs")
    output = await platform.amanage("upstream_add", slug, "up", upstream.url)
    assert "(streamable-http, 2025-11-25)" in output, output
    return slug


@pytest.fixture
def platform(federation: tuple[LiveServer, UpstreamServer]) -> LiveServer:
    return federation[0]


async def answers_received(client: Client) -> str:
    return text_of(await client.call_tool("up_answers_received", {}))


@pytest.mark.parametrize("era", ERAS)
async def test_the_handshake_upstreams_questions_reach_the_downstream_client_and_are_answered_once(
    platform: LiveServer, tenant: str, era: str
) -> None:
    asked: list[str] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append("elicit")
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append("sample")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Autumn wind"), model="test-model"
        )

    async def on_roots(context: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])

    label = f"{era}-{secrets.token_hex(3)}"
    callbacks = {"elicitation_callback": on_elicit, "sampling_callback": on_sample, "list_roots_callback": on_roots}
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, tenant, era, **callbacks) as client:
            if era == "legacy":
                assert client.protocol_version == "2025-11-25"
            assert text_of(await client.call_tool("up_ask_name", {"label": label})) == "hello Ada"
            assert text_of(await client.call_tool("up_haiku", {"topic": label})) == "Autumn wind"
            assert text_of(await client.call_tool("up_roots", {"label": label})) == "file:///work/project"
            received = await answers_received(client)
    assert asked == ["elicit", "sample", "roots"]
    for answer in (f"{label}:accept", f"haiku:{label}", f"roots:{label}"):
        assert received.count(answer) == 1, received


@pytest.mark.parametrize("era", ERAS)
async def test_the_handshake_upstreams_progress_and_logs_reach_the_downstream_client(
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
async def test_cancelling_the_downstream_call_cancels_the_handshake_upstreams_call(
    platform: LiveServer, tenant: str, era: str
) -> None:
    label = f"cancel-{secrets.token_hex(3)}"
    with anyio.fail_after(TEST_DEADLINE):
        async with downstream(platform, tenant, era) as client:
            # Leaving the call sends notifications/cancelled (2025-11-25) or closes its stream (2026-07-28).
            with anyio.move_on_after(1.0):
                await client.call_tool("up_wait_forever", {"label": label})

            async def cancelled() -> bool:
                return label in text_of(await client.call_tool("up_cancelled_calls", {}))

            await eventually(cancelled, what="the upstream call's cancellation")
