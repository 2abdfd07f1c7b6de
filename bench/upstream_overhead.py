"""What proxying costs: ``tools/call`` of an upstream MCP server's tool through a tenant of the platform, against
the same call made to the upstream directly.

``python -m bench.upstream_overhead [SECONDS]``: the upstream is the bench peer (the SDK's ``MCPServer`` under
uvicorn, JSON responses), the platform one embedded ``manage.py serve`` with the peer added as an upstream. The peer
is pinned to the last core (it stands for a server elsewhere), the platform to the first. A closed loop of 16
concurrent 2026-07-28 ``tools/call echo`` requests runs against each in turn, alternating rounds so drift hits both
alike; prints req/s and p50/p90/p99 of each, the ratio and the p50 overhead, and the CPU time per call of the peer
and of the platform process (from /proc). On two cores the three processes cannot each have one, so it measures
twice, with the load generator placed each way:

- ``own core``: the load generator beside the upstream, the platform on a core of its own, as deployed (the
  platform runs on machines of its own, not beside its clients or its upstreams). Direct and proxied runs then
  share the upstream's core alike, and the difference between them is the platform's hop.
- ``beside the load``: the load generator beside the platform, the upstream alone. The proxied run then pays for
  the load generator's CPU on the platform's core, which the direct run does not.

``python -m bench.upstream_overhead clients [SECONDS]``: what the upstream leg costs the platform's process. The peer
pinned to one core, this process to the other; 16 concurrent calls of ``echo`` for SECONDS each through: the SDK
client of a pooled upstream connection, the connection's lean path, and bare POSTs of the same request through the
door's ``httpx2`` client and its lean client. Prints calls/s and this process's CPU per call.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.mcp_wire import STATELESS, McpSession, Target, result_of
from bench.stats import percentile

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
CONCURRENCY = 16
ROUNDS = 3
TENANT = "bench-federated"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


async def _closed_loop(
    target: Target, tool: str, seconds: float, concurrency: int = CONCURRENCY
) -> tuple[int, list[float]]:
    """``concurrency`` connections each keeping one call in flight for ``seconds``: calls made and latencies."""
    sessions = [await McpSession.open(target, STATELESS) for _ in range(concurrency)]
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def worker(session: McpSession) -> None:
        prepared = session.prepare("tools/call", {"name": tool, "arguments": {"message": "hi"}})
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            result_of(await session.send(prepared))
            latencies.append(time.perf_counter() - start)

    await asyncio.gather(*(worker(session) for session in sessions))
    for session in sessions:
        session.close()
    return len(latencies), latencies


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    return " / ".join(f"{percentile(ordered, q) * 1e3:.2f}" for q in (0.5, 0.9, 0.99))


def _p50(samples: list[float]) -> float:
    return percentile(sorted(samples), 0.5)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _measure(direct: Target, proxied: Target, seconds: float, *, peer_pid: int, platform_pid: int) -> None:
    """Both placements of the load generator (see the module's docstring), one after the other."""
    peer_core, platform_core = _cores()
    for placement, core in (
        ("own core: the platform on a core of its own, the load generator beside the upstream", peer_core),
        ("beside the load: the load generator beside the platform, the upstream alone", platform_core),
    ):
        if core is not None:
            os.sched_setaffinity(0, {core})
            print(f"-- {placement}")
        await _measure_placed(direct, proxied, seconds, peer_pid=peer_pid, platform_pid=platform_pid)
        if core is None:
            return  # one core: nothing was placed, one measurement says it all


async def _measure_placed(direct: Target, proxied: Target, seconds: float, *, peer_pid: int, platform_pid: int) -> None:
    await _closed_loop(direct, "echo", 2)  # warm-up: connections, the platform's pooled upstream session
    await _closed_loop(proxied, "peer_echo", 2)
    cpu = {(kind, name): 0.0 for kind in ("direct", "proxied") for name in ("peer", "platform")}
    totals = {"direct": (0, 0.0, []), "proxied": (0, 0.0, [])}  # type: dict[str, tuple[int, float, list[float]]]
    for _ in range(ROUNDS):
        for kind, target, tool in (("direct", direct, "echo"), ("proxied", proxied, "peer_echo")):
            before = {pid: _cpu_seconds(pid) for pid in (peer_pid, platform_pid)}
            calls, latencies = await _closed_loop(target, tool, seconds)
            for pid, name in ((peer_pid, "peer"), (platform_pid, "platform")):
                cpu[kind, name] += _cpu_seconds(pid) - before[pid]
            count, elapsed, samples = totals[kind]
            totals[kind] = (count + calls, elapsed + seconds, samples + latencies)
    rates = {kind: count / elapsed for kind, (count, elapsed, _) in totals.items()}
    for kind, (_, _, samples) in totals.items():
        calls = len(samples)
        per_call = "   ".join(f"{name} {cpu[kind, name] / calls * 1e6:5.0f}" for name in ("peer", "platform"))
        print(f"{kind:8} {rates[kind]:8.0f} req/s   p50/p90/p99 ms: {_percentiles(samples)}   CPU µs/call: {per_call}")
    p50 = {kind: _p50(samples) for kind, (_, _, samples) in totals.items()}
    print(f"proxied / direct throughput: {rates['proxied'] / rates['direct']:.0%}")
    print(f"p50 overhead of proxying at c={CONCURRENCY}: {(p50['proxied'] - p50['direct']) * 1e3:.2f} ms")
    # What one call pays for the extra hop when nothing queues: the same loops, one call in flight.
    alone: dict[str, list[float]] = {"direct": [], "proxied": []}
    for _ in range(ROUNDS):
        for kind, target, tool in (("direct", direct, "echo"), ("proxied", proxied, "peer_echo")):
            alone[kind] += (await _closed_loop(target, tool, seconds / 2, concurrency=1))[1]
    for kind, samples in alone.items():
        print(f"{kind:8} c=1   p50/p90/p99 ms: {_percentiles(samples)}")
    p50_alone = {kind: _p50(samples) for kind, samples in alone.items()}
    print(f"p50 overhead of proxying at c=1: {(p50_alone['proxied'] - p50_alone['direct']) * 1e3:.2f} ms")


async def _cpu_per_call(call: Callable[[], Awaitable[Any]], seconds: float) -> tuple[float, float]:
    """16 concurrent loops of ``call`` for ``seconds``: calls per second and this process's CPU µs per call."""
    for _ in range(50):
        await call()
    calls = 0
    deadline = time.perf_counter() + seconds

    async def loop() -> None:
        nonlocal calls
        while time.perf_counter() < deadline:
            await call()
            calls += 1

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(CONCURRENCY)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return calls / wall, cpu / calls * 1e6


async def _measure_clients(url: str, seconds: float) -> None:
    import httpx2
    import orjson

    from mcp_infra.outbound.httpx2 import outbound_httpx2_client
    from mcp_infra.outbound.lean import LeanHttpClient
    from tenants.federation.connection import UpstreamConnection, UpstreamTarget

    connection = UpstreamConnection(UpstreamTarget(None, 0, "peer", url, None, 1))
    await connection.open()
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    message["params"] = {"name": "echo", "arguments": {"message": "hi"}}
    options: dict[str, Any] = {}
    connection.client.session._stamp(message, options)  # type: ignore[arg-type]  # the headers the SDK sends
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    headers.update(options["headers"])
    body = orjson.dumps(message)
    httpx2_client = outbound_httpx2_client(tenant_id=None, headers={}, timeout=httpx2.Timeout(30.0))
    lean = LeanHttpClient(url, tenant_id=None, headers={}, connect_timeout=10.0, read_timeout=30.0)

    async def sdk() -> None:
        await connection.client.call_tool("echo", {"message": "hi"})

    async def lean_path() -> None:
        await connection.call_tool("echo", {"message": "hi"})

    async def httpx2_post() -> None:
        (await httpx2_client.post(url, content=body, headers=headers)).json()

    async def lean_post() -> None:
        response = await lean.post(body, headers)
        orjson.loads(await response.read())

    try:
        for name, call in (
            ("SDK Client.call_tool", sdk),
            ("lean path call_tool", lean_path),
            ("httpx2 POST (door)", httpx2_post),
            ("lean POST (door)", lean_post),
        ):
            rate, cpu = await _cpu_per_call(call, seconds)
            print(f"{name:24} {rate:8.0f} calls/s   {cpu:6.0f} µs CPU per call")
    finally:
        await httpx2_client.aclose()
        await lean.aclose()
        await connection.close()


def _cores() -> tuple[int | None, int | None]:
    """The upstream's core and the platform's (None: one core, nothing to pin)."""
    cores = sorted(os.sched_getaffinity(0))
    return (cores[-1], cores[0]) if len(cores) > 1 else (None, None)


def _pinned(core: int | None) -> list[str]:
    return [] if core is None else ["taskset", "-c", str(core)]


def _start_peer(port: int, env: dict[str, str], core: int | None) -> subprocess.Popen[bytes]:
    """The bench peer (the SDK's ``MCPServer``) under uvicorn on ``port``, pinned to ``core`` when there is one."""
    argv = [PYTHON, "-m", "uvicorn", "bench.peer_server:app", "--port", str(port), "--log-level", "warning"]
    return subprocess.Popen([*_pinned(core), *argv], cwd=REPO, env=env)


def clients_main(seconds: float) -> int:
    """The ``clients`` mode: the peer pinned to the last core, this process to the first."""
    peer_port = _free_port()
    peer_core, own_core = _cores()
    env = {**os.environ, "MCP_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.1/32", "LOG_LEVEL": "WARNING"}
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcp_platform.settings")
    peer = _start_peer(peer_port, env, peer_core)
    try:
        _wait_for(peer_port, peer)
        if own_core is not None:
            os.sched_setaffinity(0, {own_core})
        import django
        import uvloop

        django.setup()
        uvloop.run(_measure_clients(f"http://127.0.0.1:{peer_port}/mcp", seconds))
    finally:
        peer.terminate()
        peer.wait(15)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) > 1 and argv[1] == "clients":
        return clients_main(float(argv[2]) if len(argv) > 2 else 5.0)
    seconds = float(argv[1]) if len(argv) > 1 else 10.0
    peer_port, platform_port = _free_port(), _free_port()
    with tempfile.TemporaryDirectory(prefix="bench-upstream-") as var:
        env = {
            **os.environ,
            "MCP_VAR_DIR": var,
            "MCP_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.1/32",
            "LOG_LEVEL": "WARNING",
        }
        env.pop("DATABASE_URL", None)
        env.pop("REDIS_URL", None)
        # The upstream stands for a server elsewhere: a core of its own, the platform the other; ``_measure`` places
        # the load generator (on a machine of one core, nothing is pinned).
        peer_core, own_core = _cores()
        peer = _start_peer(peer_port, env, peer_core)
        platform: subprocess.Popen[bytes] | None = None
        try:
            _wait_for(peer_port, peer)
            manage = [PYTHON, "manage.py"]
            subprocess.run([*manage, "migrate", "--noinput"], cwd=REPO, env=env, check=True, capture_output=True)
            create = f"from tenants import services; services.tenant_create(slug={TENANT!r}, name='Bench')"
            subprocess.run([*manage, "shell", "-c", create], cwd=REPO, env=env, check=True, capture_output=True)
            peer_url = f"http://127.0.0.1:{peer_port}/mcp"
            subprocess.run([*manage, "upstream_add", TENANT, "peer", peer_url], cwd=REPO, env=env, check=True)
            serve = [*manage, "serve", "--host", "127.0.0.1", "--port", str(platform_port)]
            platform = subprocess.Popen([*_pinned(own_core), *serve], cwd=REPO, env=env)
            _wait_for(platform_port, platform)
            direct = Target("127.0.0.1", peer_port, "/mcp")
            proxied = Target("127.0.0.1", platform_port, f"/t/{TENANT}/mcp")
            asyncio.run(_measure(direct, proxied, seconds, peer_pid=peer.pid, platform_pid=platform.pid))
        finally:
            for process in (platform, peer):
                if process is not None:
                    process.terminate()
                    process.wait(15)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
