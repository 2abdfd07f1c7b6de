"""Every way of stopping the platform's processes ends every process they started: ``manage.py serve`` embedded
and as a supervisor of several server processes, and ``celery worker --beat``, each signalled alone (not its
process group), the way a process manager or an OOM kill reaches them."""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mcp_platform.gateway.management.commands.serve import child_stop_seconds
from tests.e2e.live import (
    CELERY,
    PYTHON,
    ManagedProcess,
    base_env,
    fresh_database,
    live_pki,
    private_redis,
    production_requested,
    run_command,
    start_web,
    wait_for_port,
)
from tests.process_marks import TEST_MARK, new_mark, wait_for_marked, wait_until_none_marked

# A server drains and stops within its grace; the supervisor kills what is left after child_stop_seconds().
STOP_DEADLINE = child_stop_seconds() + 10.0
START_DEADLINE = 60.0

needs_production = pytest.mark.skipif(
    not production_requested(), reason="needs DATABASE_URL=postgres://… and REDIS_URL (production topology)"
)


def assert_all_end(mark: str) -> None:
    left = wait_until_none_marked(TEST_MARK, mark, timeout=STOP_DEADLINE)
    assert not left, f"still running {STOP_DEADLINE}s after the stop: {left}"


def start_marked_web(tmp: Path, env: dict[str, str], *extra: str) -> tuple[ManagedProcess, str]:
    """``manage.py serve`` whose every process carries a mark of its own; the process and the mark, once it
    listens."""
    mark = new_mark()
    process, url = start_web(f"serve-{mark}", {**env, TEST_MARK: mark}, tmp, *extra)
    wait_for_port(process, int(urlsplit(url).port or 0))
    return process, mark


# ---- embedded --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedded_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("hygiene-embedded")
    env = base_env(tmp / "var", secrets.token_urlsafe(32), live_pki(tmp))
    run_command([str(PYTHON), "manage.py", "migrate", "--noinput"], env)
    return env


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_to_embedded_serve_alone_ends_every_process_it_started(
    embedded_env: dict[str, str], tmp_path: Path, signum: signal.Signals
) -> None:
    process, mark = start_marked_web(tmp_path, embedded_env, "--no-migrate")
    try:
        os.kill(process.popen.pid, signum)
        assert_all_end(mark)
    finally:
        process.stop()


# ---- production: serve --workers 2 and the worker with beat ----------------------------------------------


@pytest.fixture(scope="module")
def production_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment of a production process on a database and a Redis of this module's own, migrated."""
    if not production_requested():
        pytest.skip("needs DATABASE_URL=postgres://… and REDIS_URL (production topology)")
    tmp = tmp_path_factory.mktemp("hygiene-production")
    with ExitStack() as stack:
        env = base_env(tmp / "var", secrets.token_urlsafe(32), live_pki(tmp))
        env.update({"DATABASE_URL": fresh_database(stack), "REDIS_URL": private_redis(stack, tmp / "redis").url()})
        run_command([str(PYTHON), "manage.py", "migrate", "--noinput"], env)
        yield env


@needs_production
@pytest.mark.parametrize(
    "signum",
    [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGKILL],
    ids=lambda s: s.name,
)
def test_a_signal_to_the_serve_supervisor_alone_ends_its_server_processes(
    production_env: dict[str, str], tmp_path: Path, signum: signal.Signals
) -> None:
    process, mark = start_marked_web(tmp_path, production_env, "--no-migrate", "--no-worker", "--workers", "2")
    try:
        started = wait_for_marked(TEST_MARK, mark, count=3, timeout=START_DEADLINE)
        assert len(started) == 3, f"expected the supervisor and two server processes: {started}"
        os.kill(process.popen.pid, signum)
        assert_all_end(mark)
    finally:
        process.stop()


@needs_production
def test_a_worker_killed_outright_leaves_no_beat_behind(production_env: dict[str, str], tmp_path: Path) -> None:
    """``celery worker --beat`` forks beat as a child; SIGKILL of the worker alone must end it too, or the
    periodic tasks run once per beat left over."""
    mark = new_mark()
    argv = [str(CELERY), "-A", "mcp_platform", "worker", "--beat", "--pool", "threads", "-c", "2", "-l", "WARNING"]
    argv += ["--schedule", str(tmp_path / "beat-schedule")]
    worker = ManagedProcess.start("worker", argv, {**production_env, TEST_MARK: mark}, tmp_path)
    try:
        started = wait_for_marked(TEST_MARK, mark, count=2, timeout=START_DEADLINE)
        assert len(started) == 2, f"expected the worker and its beat:\n{started}\n{worker.tail()}"
        os.kill(worker.popen.pid, signal.SIGKILL)
        assert_all_end(mark)
    finally:
        worker.stop()
