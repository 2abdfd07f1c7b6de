"""Tasks when things break, on a production topology of the test's own: the worker killed mid-task, a worker
stopped with SIGTERM mid-task, Redis restarted (every key lost) while tasks run and wait, and Redis down when a task
is created. In each case the client's task ends the way docs/protocol.md says, and the worker process rides it out."""

from __future__ import annotations

import json
import os
import signal
import time

import anyio
import pytest

from tests.e2e.faults import DEMO_TENANT, Topology
from tests.e2e.live import CELERY, PRODUCTION_ONLY, ManagedProcess
from tests.e2e.raw_http import raw_http_client
from tests.e2e.task_calls import count_slowly, counted_to, counting, finished, stateless, task, until

pytestmark = [*PRODUCTION_ONLY, pytest.mark.timeout(300)]

# The platform's defaults (docs/protocol.md, "Tasks"): the lease a worker holds on a run, and how often the sweep looks.
LEASE_SECONDS = 30.0
SWEEP_SECONDS = 5.0
# What a worker needs to start (Django, Celery, connecting) and a run to be claimed, on a busy machine.
WORKER_START_SECONDS = 20.0
RUNNING_DEADLINE = 30.0
# Creating a task with Redis down: Celery's publish retries against a refused connection, then the answer.
BROKER_DOWN_ANSWER_SECONDS = 10.0
# The fault topology's worker runs ``-c 4``.
WORKER_THREADS = 4
# A worker given SIGTERM finishes its runs for this long, then hands over the rest (MCP_DRAIN_SECONDS, set short).
WORKER_DRAIN_SECONDS = 3.0
TOOL_RUN_EXECUTE = "mcp_platform.jobs.tasks.tool_run_execute"


async def test_a_task_whose_worker_was_killed_is_finished_by_the_next_worker_within_the_lease(
    fault_topology: Topology,
) -> None:
    url = fault_topology.endpoint(DEMO_TENANT)
    steps = 8
    async with raw_http_client() as http:
        task_id = await count_slowly(http, url, steps)
        await until(http, url, task_id, counting, RUNNING_DEADLINE)

        fault_topology.kill_worker()
        killed = time.monotonic()
        fault_topology.start_worker()
        done = await until(http, url, task_id, finished, LEASE_SECONDS + SWEEP_SECONDS + WORKER_START_SECONDS + steps)
        took = time.monotonic() - killed

    assert done["status"] == "completed", done
    assert done["result"]["content"] == counted_to(steps)
    print(f"finished {took:.1f} s after the kill")
    assert took < LEASE_SECONDS + SWEEP_SECONDS + WORKER_START_SECONDS + steps


@pytest.fixture
def short_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requested before the topology: its processes inherit the environment."""
    monkeypatch.setenv("MCP_DRAIN_SECONDS", str(WORKER_DRAIN_SECONDS))


async def start_second_worker(topology: Topology) -> ManagedProcess:
    """A worker without beat beside the topology's, once it takes tasks."""
    argv = [
        str(CELERY),
        "-A",
        "mcp_platform",
        "worker",
        "--pool",
        "threads",
        "-c",
        "2",
        "-l",
        "INFO",
        "-n",
        "second@%h",
    ]
    worker = ManagedProcess.start("worker-second", argv, topology.env_for("worker-second"), topology.tmp)
    topology.stack.callback(worker.stop)
    with anyio.fail_after(WORKER_START_SECONDS * 2):
        while "ready." not in worker.stderr_path.read_text(errors="replace"):
            assert worker.alive, worker.tail()
            await anyio.sleep(0.2)
    return worker


async def test_a_worker_stopped_with_sigterm_hands_its_unfinished_task_to_another_worker_at_once(
    short_drain: None, fault_topology: Topology
) -> None:
    """SIGTERM to the worker running a task: it takes no new task, runs the call for the drain, then stops it and
    hands the run over; the other worker runs it from the start, and it completes once. A new start (generation 2)
    that is no takeover, well within a lease: the run never waited for its lease to lapse."""
    url = fault_topology.endpoint(DEMO_TENANT)
    first = fault_topology.worker
    assert first is not None
    second = await start_second_worker(fault_topology)
    steps = 6
    async with raw_http_client() as http:
        task_id = await count_slowly(http, url, steps)
        await until(http, url, task_id, counting, RUNNING_DEADLINE)
        # The second worker logs the tasks it receives; the first logs warnings only.
        received = f"Task {TOOL_RUN_EXECUTE}[" in second.stderr_path.read_text(errors="replace")
        running, other = (second, first) if received else (first, second)
        signalled = time.monotonic()
        os.kill(running.popen.pid, signal.SIGTERM)
        status = await anyio.to_thread.run_sync(running.popen.wait, WORKER_DRAIN_SECONDS + RUNNING_DEADLINE)
        stopped = time.monotonic() - signalled
        done = await until(http, url, task_id, finished, steps + RUNNING_DEADLINE)
        took = time.monotonic() - signalled
    row = json.loads(
        (
            await fault_topology.amanage(
                "shell",
                "-c",
                "import json; from mcp_platform.jobs.models import ToolRun; "
                f"print(json.dumps(ToolRun.objects.values('generation', 'takeovers').get(pk={task_id!r})))",
            )
        ).splitlines()[-1]
    )

    print(f"{running.name} stopped {stopped:.1f} s after SIGTERM; the task completed {took:.1f} s after it")
    assert status == 0, running.tail()
    assert WORKER_DRAIN_SECONDS - 0.5 < stopped < WORKER_DRAIN_SECONDS + 10, running.tail()
    assert done["status"] == "completed" and done["result"]["content"] == counted_to(steps), done
    assert row == {"generation": 2, "takeovers": 0}, row
    assert took < LEASE_SECONDS, "handed over, not left for the lease to lapse"
    assert other.alive, other.tail()


async def test_the_worker_rides_out_redis_restarts_with_tasks_running_and_the_lost_messages_are_queued_again(
    fault_topology: Topology,
) -> None:
    """Three restarts in a row, each while a task runs (its message unacknowledged) and, the third time, while
    tasks wait in the queue that the restart empties: every task completes and the worker never exits."""
    url, other = fault_topology.endpoint(DEMO_TENANT, web=0), fault_topology.endpoint(DEMO_TENANT, web=1)
    worker = fault_topology.worker
    assert worker is not None
    async with raw_http_client() as http:
        for _ in range(2):
            running = await count_slowly(http, url, 4)
            await until(http, url, running, counting, RUNNING_DEADLINE)
            fault_topology.restart_redis()
            done = await until(http, other, running, finished, RUNNING_DEADLINE)
            assert done["status"] == "completed" and worker.alive, done

        # Every worker thread busy, two more tasks queued in Redis: the restart loses their messages.
        busy = [await count_slowly(http, url, 6) for _ in range(WORKER_THREADS)]
        for task_id in busy:
            await until(http, url, task_id, counting, RUNNING_DEADLINE)
        queued = [await count_slowly(http, url, 2) for _ in range(2)]
        fault_topology.restart_redis()
        outcomes = [
            await until(http, other, task_id, finished, LEASE_SECONDS + SWEEP_SECONDS + RUNNING_DEADLINE)
            for task_id in [*busy, *queued]
        ]
        fresh = await count_slowly(http, other, 1)
        after = await until(http, url, fresh, finished, RUNNING_DEADLINE)

    assert [outcome["status"] for outcome in outcomes] == ["completed"] * (WORKER_THREADS + 2), outcomes
    assert after["result"]["content"] == counted_to(1)
    assert worker.alive, worker.tail()
    assert fault_topology.redis.restarts == 3


async def test_a_task_created_while_redis_is_down_is_accepted_and_runs_once_redis_is_back(
    fault_topology: Topology,
) -> None:
    """The choice docs/protocol.md documents: the run is stored and the client gets its task (no 500, no error); the
    sweep queues it once the broker is back, and it finishes, so it stops counting against the caller's limit."""
    url = fault_topology.endpoint(DEMO_TENANT)
    async with raw_http_client() as http:
        # The web process knows the tenant already: a first request for a tenant is not this test's subject.
        await until(http, url, await count_slowly(http, url, 1, delay_ms=0), finished, RUNNING_DEADLINE)
        fault_topology.redis.kill()
        try:
            asked = time.monotonic()
            created = await stateless(
                http, url, "tools/call", {"name": "count_slowly", "arguments": {"steps": 1, "delay_ms": 0}}
            )
            answered_in = time.monotonic() - asked
            while_down = await task(http, url, str(created["taskId"]))
        finally:
            fault_topology.redis.start()
        done = await until(
            http, url, str(created["taskId"]), finished, SWEEP_SECONDS + WORKER_START_SECONDS + RUNNING_DEADLINE
        )

    print(f"created in {answered_in:.2f} s with Redis down")
    assert (created["resultType"], created["status"], while_down["status"]) == ("task", "working", "working")
    assert answered_in < BROKER_DOWN_ANSWER_SECONDS
    assert done["result"]["content"] == counted_to(1)
