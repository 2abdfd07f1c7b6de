"""PostgreSQL connections terminated under traffic (a restart, a failover, an idle-connection kill): the web
processes and the worker recover without a restart, and only the requests in flight at the moment may fail."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import httpx
import psycopg

from tests.e2e.faults import Topology
from tests.e2e.live import PRODUCTION_ONLY
from tests.e2e.raw_http import (
    CLIENT_INFO,
    RawSession,
    parse_sse_body,
    raw_http_client,
    request_message,
    stateless_headers,
    stateless_request,
)

pytestmark = PRODUCTION_ONLY

DEADLINE = 120.0
TERMINATION_DEADLINE = 10.0
TRAFFIC_CLIENTS = 6
PROBE_TIMEOUT = 15.0
TERMINATIONS_UNDER_TRAFFIC = 3

Probe = Callable[[httpx.AsyncClient, int], Awaitable[None]]


# ---- what a client does --------------------------------------------------------------------------------


def stateless_call(topology: Topology) -> Probe:
    async def probe(http: httpx.AsyncClient, web: int) -> None:
        response = await http.post(
            topology.endpoint(web=web),
            json=stateless_request(1, "tools/call", {"name": "greet", "arguments": {"name": "db"}}),
            headers=stateless_headers("tools/call", "greet"),
        )
        assert response.status_code == 200, f"HTTP {response.status_code}: {response.text}"
        assert "result" in response.json(), response.text

    return probe


def handshake_session(topology: Topology) -> Probe:
    async def probe(http: httpx.AsyncClient, web: int) -> None:
        session = RawSession(http, topology.endpoint(web=web))
        await session.initialize()
        listed = await session.call("tools/list")
        assert listed.get("result", {}).get("tools"), listed

    return probe


def legacy_sse_ping(topology: Topology) -> Probe:
    """The 2024-11-05 transport: open ``/sse``, POST to the endpoint it names, read the answers on the stream."""

    async def probe(http: httpx.AsyncClient, web: int) -> None:
        base = topology.web_urls[web]
        async with http.stream("GET", topology.sse_endpoint(web=web), headers={"Accept": "text/event-stream"}) as sse:
            assert sse.status_code == 200, f"HTTP {sse.status_code}: {(await sse.aread())!r}"
            lines = sse.aiter_lines()
            endpoint = await _next_event_data(lines, "endpoint")
            url = base + endpoint
            initialize = {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": CLIENT_INFO}
            for message in (
                request_message(1, "initialize", initialize),
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                request_message(2, "tools/list"),
            ):
                posted = await http.post(url, json=message)
                assert posted.status_code == 202, f"HTTP {posted.status_code}: {posted.text}"
                if "id" in message:
                    answer = json.loads(await _next_event_data(lines, "message"))
                    assert answer.get("id") == message["id"] and "result" in answer, answer

    return probe


async def _next_event_data(lines: object, name: str) -> str:
    block: list[str] = []
    async for line in lines:  # type: ignore[attr-defined]
        if line:
            block.append(line)
            continue
        events = parse_sse_body("\n".join(block) + "\n\n")
        block = []
        if events and events[0].event == name:
            return events[0].data
    raise AssertionError(f"the stream ended before a {name!r} event")


def protected_call(topology: Topology, slug: str, tokens: list[str]) -> Probe:
    """A tenant that requires authorization: every request's bearer check reads the database."""

    async def probe(http: httpx.AsyncClient, web: int) -> None:
        headers = {**stateless_headers("tools/list"), "Authorization": f"Bearer {tokens[web]}"}
        response = await http.post(
            topology.endpoint(slug, web=web), json=stateless_request(1, "tools/list"), headers=headers
        )
        assert response.status_code == 200, f"HTTP {response.status_code}: {response.text}"
        assert "result" in response.json(), response.text

    return probe


def unknown_tenant(topology: Topology) -> Probe:
    """An unknown tenant is not cached: each request asks the database."""

    async def probe(http: httpx.AsyncClient, web: int) -> None:
        response = await http.post(
            topology.endpoint(f"missing-{secrets.token_hex(3)}", web=web),
            json=stateless_request(1, "tools/list"),
            headers=stateless_headers("tools/list"),
        )
        assert response.status_code == 404, f"HTTP {response.status_code}: {response.text}"

    return probe


# ---- setting up and breaking ------------------------------------------------------------------------------

MACHINE_CLIENT = """
import json
from mcp_platform.oauth.machine_clients import machine_client_create
client, secret = machine_client_create(tenant=tenant, name="Fault probe", scopes=["mcp:tools"])
print(json.dumps({"client_id": client.client_id, "secret": secret}))
"""


async def protected_tenant_tokens(topology: Topology, http: httpx.AsyncClient) -> tuple[str, list[str]]:
    """A tenant requiring authorization, with a tool, and a client-credentials token for its endpoint on each web
    process (a token's audience is one endpoint URL)."""
    slug = f"secure-{secrets.token_hex(4)}"
    output = await topology.amanage(
        "shell",
        "-c",
        f"from tenants import services; tenant = services.tenant_create(slug={slug!r}, name='Secure', "
        "requires_authorization=True); "
        "services.tool_create(tenant=tenant, name='greet', description='Greets', "
        "config={'content': [{'type': 'text', 'text': 'hello'}]})\n" + MACHINE_CLIENT,
    )
    credentials = json.loads(output.strip().splitlines()[-1])
    tokens = []
    for web, base in enumerate(topology.web_urls):
        response = await http.post(
            f"{base}/oauth/token/",
            data={"grant_type": "client_credentials", "resource": topology.endpoint(slug, web=web)},
            auth=(credentials["client_id"], credentials["secret"]),
        )
        assert response.status_code == 200, response.text
        tokens.append(response.json()["access_token"])
    return slug, tokens


def terminate_and_wait(topology: Topology) -> int:
    """Terminate every connection to the topology's database and wait until their backends have exited (so each
    client's socket already holds the server's goodbye); how many there were."""
    admin_url = topology.database_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        before = {pid for (pid,) in admin.execute(_BACKENDS, (topology.database_name,)).fetchall()}
        ended = topology.terminate_database_connections()
        deadline = time.monotonic() + TERMINATION_DEADLINE
        while before & {pid for (pid,) in admin.execute(_BACKENDS, (topology.database_name,)).fetchall()}:
            assert time.monotonic() < deadline, "terminated backends did not exit"
            time.sleep(0.02)
    return ended


_BACKENDS = "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"


@dataclass(frozen=True)
class Outcome:
    probe: str
    started: float
    ended: float
    error: str | None


@dataclass
class Traffic:
    """What the clients saw, in order, and a way to wait for more of it."""

    outcomes: list[Outcome] = field(default_factory=list)
    progress: anyio.Event = field(default_factory=anyio.Event)

    def record(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self.progress.set()
        self.progress = anyio.Event()

    def succeeded(self) -> int:
        return sum(1 for outcome in self.outcomes if outcome.error is None)

    async def each_succeeds_after(self, probes: set[str], moment: float) -> None:
        """Until every one of ``probes`` has succeeded in a request started after ``moment`` (bounded by the
        test's deadline)."""
        while probes - {o.probe for o in self.outcomes if o.error is None and o.started > moment}:
            await self.progress.wait()

    async def successes(self, count: int) -> None:
        """Until ``count`` more requests have succeeded (bounded by the test's deadline)."""
        target = self.succeeded() + count
        while self.succeeded() < target:
            await self.progress.wait()


async def run_probe(name: str, probe: Probe, http: httpx.AsyncClient, web: int) -> Outcome:
    """One probe; a probe that gets no answer within ``PROBE_TIMEOUT`` (a stream kept alive by comments alone)
    is a failure, not a hang."""
    started = time.monotonic()
    try:
        with anyio.fail_after(PROBE_TIMEOUT):
            await probe(http, web)
    except (AssertionError, httpx.HTTPError, ValueError, TimeoutError) as exc:
        return Outcome(name, started, time.monotonic(), f"{type(exc).__name__}: {exc}")
    return Outcome(name, started, time.monotonic(), None)


# ---- the tests -------------------------------------------------------------------------------------------


async def test_terminated_database_connections_cost_no_later_request(fault_topology: Topology) -> None:
    topology = fault_topology
    async with raw_http_client() as http:
        with anyio.fail_after(DEADLINE):
            slug, tokens = await protected_tenant_tokens(topology, http)
            probes: dict[str, Probe] = {
                "stateless tools/call": stateless_call(topology),
                "handshake initialize + tools/list": handshake_session(topology),
                "2024-11-05 /sse + /messages": legacy_sse_ping(topology),
                "bearer-checked tools/list": protected_call(topology, slug, tokens),
                "unknown tenant": unknown_tenant(topology),
            }
            # Every process has connections open (and every cache warm) before they are terminated.
            for web in range(len(topology.web_urls)):
                for name, probe in probes.items():
                    assert (await run_probe(name, probe, http, web)).error is None, name

            for round_ in range(2):
                assert terminate_and_wait(topology) > 0
                # A tenant no process has seen yet: its first request reads the tenant on the new connection.
                fresh = await topology.atenant_create(f"fresh{round_}", then=_GREET)
                probes[f"first request for {fresh}"] = stateless_call_on(topology, fresh)
                failures = [
                    outcome
                    for web in range(len(topology.web_urls))
                    for name, probe in probes.items()
                    if (outcome := await run_probe(name, probe, http, web)).error is not None
                ]
                assert not failures, f"round {round_}: {failures}\n{topology.logs()}"
                del probes[f"first request for {fresh}"]


async def test_under_traffic_only_requests_in_flight_may_fail(fault_topology: Topology) -> None:
    topology = fault_topology
    traffic = Traffic()
    terminations: list[tuple[float, float]] = []
    async with raw_http_client() as http:
        with anyio.fail_after(DEADLINE):
            slug, tokens = await protected_tenant_tokens(topology, http)
            probes = [
                ("stateless tools/call", stateless_call(topology)),
                ("handshake initialize + tools/list", handshake_session(topology)),
                ("2024-11-05 /sse + /messages", legacy_sse_ping(topology)),
                ("bearer-checked tools/list", protected_call(topology, slug, tokens)),
                ("unknown tenant", unknown_tenant(topology)),
            ]
            stop = anyio.Event()

            async def client(index: int) -> None:
                turn = index
                while not stop.is_set():
                    name, probe = probes[turn % len(probes)]
                    traffic.record(await run_probe(name, probe, http, turn % len(topology.web_urls)))
                    turn += 1

            async with anyio.create_task_group() as clients:
                for index in range(TRAFFIC_CLIENTS):
                    clients.start_soon(client, index)
                for _ in range(TERMINATIONS_UNDER_TRAFFIC):
                    await traffic.successes(2 * len(probes))
                    started = time.monotonic()
                    assert await anyio.to_thread.run_sync(terminate_and_wait, topology) > 0
                    terminations.append((started, time.monotonic()))
                # Each kind of request must be seen succeeding after the last termination, not just any 10.
                await traffic.each_succeeds_after({name for name, _ in probes}, terminations[-1][1])
                stop.set()

    def in_flight(outcome: Outcome) -> bool:
        return any(outcome.started <= ended and outcome.ended >= started for started, ended in terminations)

    failed_later = [outcome for outcome in traffic.outcomes if outcome.error is not None and not in_flight(outcome)]
    assert not failed_later, f"{len(failed_later)} requests failed outside a termination: {failed_later[:5]}"
    last = terminations[-1][1]
    after = [outcome for outcome in traffic.outcomes if outcome.started > last]
    assert {outcome.probe for outcome in after} == {name for name, _ in probes}
    assert all(outcome.error is None for outcome in after)


_GREET = (
    "services.tool_create(tenant=tenant, name='greet', description='Greets', "
    "config={'content': [{'type': 'text', 'text': 'hello'}]})"
)


def stateless_call_on(topology: Topology, slug: str) -> Probe:
    async def probe(http: httpx.AsyncClient, web: int) -> None:
        response = await http.post(
            topology.endpoint(slug, web=web),
            json=stateless_request(1, "tools/call", {"name": "greet", "arguments": {}}),
            headers=stateless_headers("tools/call", "greet"),
        )
        assert response.status_code == 200, f"HTTP {response.status_code}: {response.text}"
        assert "result" in response.json(), response.text

    return probe


def refuse_connections(topology: Topology, refused: bool) -> None:
    """Make the topology's database refuse new connections (and end the open ones), or accept them again: what a
    client sees while PostgreSQL is down or failing over, on a server other tests go on using."""
    admin_url = topology.database_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        allow = "false" if refused else "true"
        admin.execute(f'ALTER DATABASE "{topology.database_name}" WITH ALLOW_CONNECTIONS {allow}')
    if refused:
        terminate_and_wait(topology)


async def test_a_database_that_cannot_be_reached_is_a_503_with_retry_after_until_it_is_back(
    fault_topology: Topology,
) -> None:
    """Not a 500: the service is unavailable for a moment, in the transport's terms and in JSON-RPC's, on each path
    that needs the database (the gateway's tenant lookup, a session's creation, the 2024-11-05 stream's session and
    a message to a session not yet known), and the processes say they are not ready; once the database is back the
    same requests succeed, on the same processes, and they are ready again."""
    topology = fault_topology
    async with raw_http_client() as http:
        with anyio.fail_after(DEADLINE):
            for web in range(len(topology.web_urls)):
                await handshake_session(topology)(http, web)
            await anyio.to_thread.run_sync(refuse_connections, topology, True)
            try:
                for web, base in enumerate(topology.web_urls):
                    refused = [
                        await http.post(
                            topology.endpoint(f"missing-{secrets.token_hex(3)}", web=web),
                            json=stateless_request(1, "tools/list"),
                            headers=stateless_headers("tools/list"),
                        ),
                        await http.post(
                            topology.endpoint(web=web),
                            json=request_message(1, "initialize", HANDSHAKE_INITIALIZE),
                            headers={"Accept": "application/json, text/event-stream"},
                        ),
                        await http.get(topology.sse_endpoint(web=web), headers={"Accept": "text/event-stream"}),
                        await http.post(
                            f"{base}/t/conformance/messages?session_id={secrets.token_urlsafe(24)}",
                            json=request_message(1, "ping"),
                        ),
                    ]
                    for response in refused:
                        assert response.status_code == 503, f"HTTP {response.status_code}: {response.text}"
                        assert response.headers["retry-after"] == "5"
                        error = response.json()["error"]
                        assert error["code"] == -32603 and "temporarily unavailable" in error["message"], error
                    # Alive, not ready, and (to this loopback client) saying why.
                    assert (await http.get(f"{base}/healthz")).status_code == 200
                    readiness = await http.get(f"{base}/readyz")
                    assert readiness.status_code == 503, readiness.text
                    checks = readiness.json()["checks"]
                    assert not checks["database"]["ok"] and checks["database"]["seconds"] < 1.5, checks
                    assert checks["redis"]["ok"], checks
            finally:
                await anyio.to_thread.run_sync(refuse_connections, topology, False)
            for web, base in enumerate(topology.web_urls):
                await handshake_session(topology)(http, web)
                await unknown_tenant(topology)(http, web)
                assert (await http.get(f"{base}/readyz")).status_code == 200


HANDSHAKE_INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO}
