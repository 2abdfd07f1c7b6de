"""The benchmark harness against live servers: our platform and the SDK peer serve the same tools, and the
load generator drives both eras of both without errors (a broken harness must fail here, not in a 15-minute run).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from bench.checks import check_catalog, check_equivalent
from bench.mcp_wire import ERAS, Target
from bench.run import PEER_APP, PEER_SERVER
from bench.topology import PYTHON, REPO, Cores, Process, Stack, base_env
from tests.e2e.live import LiveServer

pytestmark = pytest.mark.anyio

CATALOG_TOOLS = 60
DEADLINE = 60.0


@pytest.fixture(scope="module")
def ours(live_platform: LiveServer) -> Target:
    live_platform.manage("load_bench_tenants", "--catalog-tools", str(CATALOG_TOOLS))
    url = urlsplit(live_platform.endpoint("bench"))
    return Target(url.hostname or "127.0.0.1", url.port or 0, url.path)


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    stack = Stack(Cores((), ()), tmp_path_factory.mktemp("peer"), base_env(), via_serve=False)
    try:
        yield stack.start_app(PEER_SERVER, PEER_APP, "peer")
    finally:
        stack.stop_all()


def peer_target(process: Process) -> Target:
    return Target("127.0.0.1", process.port or 0, "/mcp")


def loadgen(job: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [PYTHON, "-m", "bench.loadgen"],
        input=json.dumps(job) + "\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


async def test_ours_and_the_peer_offer_the_same_tools_with_the_same_answers(ours: Target, peer: Process) -> None:
    with anyio.fail_after(DEADLINE):
        await check_equivalent(ours, peer_target(peer))


async def test_our_catalog_tenant_answers_a_page_and_more_to_come(ours: Target) -> None:
    catalog = Target(ours.host, ours.port, ours.path.replace("/bench/", "/bench-catalog/"))
    with anyio.fail_after(DEADLINE):
        assert await check_catalog(catalog, paged=True) < CATALOG_TOOLS


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("op", ["tools_call", "session_setup"])
def test_the_load_generator_drives_both_systems_without_errors(ours: Target, peer: Process, era: str, op: str) -> None:
    if op == "tools_call":
        operation = {
            "type": "request",
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "x"}},
        }
    else:
        operation = {"type": "handshake"} if era == "handshake" else {"type": "request", "method": "server/discover"}
    for target in (ours, peer_target(peer)):
        job = {
            "kind": "closed_loop",
            "targets": [target.__dict__],
            "era": era,
            "op": operation,
            "concurrency": 4,
            "warmup": 0.2,
            "windows": 2,
            "window": 0.3,
        }
        result = loadgen(job)

        assert result.get("error") is None, result
        assert [w["errors"] for w in result["windows"]] == [0, 0], result["first_error"]
        assert all(w["count"] > 0 and w["p99_us"] >= w["p50_us"] > 0 for w in result["windows"])


@pytest.mark.parametrize("era", ERAS)
def test_every_progress_notification_is_timed(ours: Target, era: str) -> None:
    job = {
        "kind": "progress",
        "target": ours.__dict__,
        "era": era,
        "calls": 2,
        "steps": 20,
        "interval_ms": 0,
        "tool": "progress",
        "timeout": 30,
    }
    result = loadgen(job)

    assert result["errors"] == 0, result["first_error"]
    assert result["samples"] == result["expected"] == 40
    assert 0 < result["p50_us"] < 10_000_000


def test_the_peer_lists_a_whole_catalog_at_once(tmp_path: Path) -> None:
    stack = Stack(Cores((), ()), tmp_path, base_env(), via_serve=False)
    try:
        process = stack.start_app(PEER_SERVER, PEER_APP, "peer-catalog", {"BENCH_PEER_CATALOG_TOOLS": "1500"})
        assert anyio.run(lambda: check_catalog(peer_target(process), paged=False)) == 1500
    finally:
        stack.stop_all()
