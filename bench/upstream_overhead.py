"""What proxying costs: ``tools/call`` of an upstream MCP server's tool through a tenant of the platform, against
the same call made to the upstream directly.

``python -m bench.upstream_overhead [SECONDS]``: the upstream is the bench peer (the SDK's ``MCPServer`` under
uvicorn, JSON responses), the platform one embedded ``manage.py serve`` with the peer added as an upstream. A
closed loop of 16 concurrent 2026-07-28 ``tools/call echo`` requests runs against each in turn, alternating
rounds so drift hits both alike; prints req/s and p50/p90/p99 of each, the ratio and the p50 overhead.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.mcp_wire import STATELESS, McpSession, Target, result_of

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


async def _closed_loop(target: Target, tool: str, seconds: float) -> tuple[int, list[float]]:
    """``CONCURRENCY`` connections each keeping one call in flight for ``seconds``: calls made and latencies."""
    sessions = [await McpSession.open(target, STATELESS) for _ in range(CONCURRENCY)]
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
    return " / ".join(f"{ordered[int(len(ordered) * q) - 1] * 1e3:.2f}" for q in (0.5, 0.9, 0.99))


async def _measure(direct: Target, proxied: Target, seconds: float) -> None:
    await _closed_loop(direct, "echo", 2)  # warm-up: connections, the platform's pooled upstream session
    await _closed_loop(proxied, "peer_echo", 2)
    totals = {"direct": (0, 0.0, []), "proxied": (0, 0.0, [])}  # type: dict[str, tuple[int, float, list[float]]]
    for _ in range(ROUNDS):
        for kind, target, tool in (("direct", direct, "echo"), ("proxied", proxied, "peer_echo")):
            calls, latencies = await _closed_loop(target, tool, seconds)
            count, elapsed, samples = totals[kind]
            totals[kind] = (count + calls, elapsed + seconds, samples + latencies)
    rates = {kind: count / elapsed for kind, (count, elapsed, _) in totals.items()}
    for kind, (_, _, samples) in totals.items():
        print(f"{kind:8} {rates[kind]:8.0f} req/s   p50/p90/p99 ms: {_percentiles(samples)}")
    p50 = {kind: sorted(samples)[len(samples) // 2] for kind, (_, _, samples) in totals.items()}
    print(f"proxied / direct throughput: {rates['proxied'] / rates['direct']:.0%}")
    print(f"p50 overhead of proxying: {(p50['proxied'] - p50['direct']) * 1e3:.2f} ms")


def main(argv: list[str]) -> int:
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
        peer = subprocess.Popen(
            [PYTHON, "-m", "uvicorn", "bench.peer_server:app", "--port", str(peer_port), "--log-level", "warning"],
            cwd=REPO,
            env=env,
        )
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
            platform = subprocess.Popen(serve, cwd=REPO, env=env)
            _wait_for(platform_port, platform)
            direct = Target("127.0.0.1", peer_port, "/mcp")
            proxied = Target("127.0.0.1", platform_port, f"/t/{TENANT}/mcp")
            asyncio.run(_measure(direct, proxied, seconds))
        finally:
            for process in (platform, peer):
                if process is not None:
                    process.terminate()
                    process.wait(15)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
