"""``manage.py`` commands of the end-to-end tests, run by long-lived processes per live platform
(``tests/e2e/command_server.py``) where the test is not about the command itself.

Django's start-up costs a command 2 to 4 s of CPU on these machines; the tests run a few hundred. The commands that
change data through the services or the ORM (``shell -c``, the loaders, ``migrate``, ``createsuperuser``,
``upstream_add``, which connects to the upstream once and closes) go to a long-lived process; the rest (refreshes
that go through the upstream pool, the serving and worker commands) start a process each, as a person would run
them. Commands sent at once each get a long-lived process of their own (up to ``MAX_KEPT_PROCESSES``, started the
first time they are needed), so commands run concurrently never wait on each other.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON = REPO / ".venv" / "bin" / "python"
SERVER = Path(__file__).resolve().parent / "command_server.py"
COMMAND_TIMEOUT = 90.0
# The commands the long-lived process runs; anything else is a process of its own.
KEPT_COMMANDS = frozenset(
    {
        "shell",
        "load_demo_tenant",
        "load_conformance_tenant",
        "load_bench_tenants",
        "secret_set",
        "migrate",
        "createsuperuser",
        "upstream_add",
    }
)
# Long-lived processes per runner: as many commands as the tests of one platform send at once.
MAX_KEPT_PROCESSES = 3


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str


class CommandRunner:
    """Runs ``manage.py`` commands with one environment; ``stop`` ends its long-lived processes."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = {**env, "PYTHONPATH": str(REPO)}
        self._lock = threading.Lock()
        self._idle: list[subprocess.Popen[str]] = []
        self._started = 0
        self._stopped = False

    def run(self, *args: str) -> Outcome:
        """Run ``manage.py *args`` to completion (blocking)."""
        process = self._take() if args and args[0] in KEPT_COMMANDS else None
        if process is None:
            return self._run_alone(list(args))
        try:
            outcome = self._run_kept(process, list(args))
        except BaseException:
            self._retire(process)
            raise
        self._give_back(process)
        return outcome

    async def arun(self, *args: str) -> Outcome:
        """``run`` from async code, without blocking the event loop."""
        return await anyio.to_thread.run_sync(lambda: self.run(*args))

    def check(self, *args: str) -> str:
        """``run``, failing the test with the command's output when it fails; its stdout."""
        outcome = self.run(*args)
        if outcome.code != 0:
            pytest.fail(f"manage.py {' '.join(args)} failed ({outcome.code}):\n{outcome.stdout}\n{outcome.stderr}")
        return outcome.stdout

    async def acheck(self, *args: str) -> str:
        outcome = await self.arun(*args)
        assert outcome.code == 0, f"manage.py {args[0]} failed:\n{outcome.stdout}\n{outcome.stderr}"
        return outcome.stdout

    def _run_alone(self, args: list[str]) -> Outcome:
        argv = [str(PYTHON), "manage.py", *args]
        try:
            done = subprocess.run(argv, cwd=REPO, env=self.env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"{' '.join(argv)} did not finish in {COMMAND_TIMEOUT}s: {exc.stdout!r} {exc.stderr!r}")
        return Outcome(done.returncode, done.stdout, done.stderr)

    def _run_kept(self, process: subprocess.Popen[str], args: list[str]) -> Outcome:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(args) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        if not line:
            pytest.fail(f"the long-lived manage.py process ended while running {' '.join(args)}")
        answer = json.loads(line)
        return Outcome(int(answer["code"]), str(answer["stdout"]), str(answer["stderr"]))

    def _take(self) -> subprocess.Popen[str] | None:
        """An idle long-lived process (started when none is and fewer than the most are running), or None."""
        with self._lock:
            if self._stopped:
                return None
            while self._idle:
                process = self._idle.pop()
                if process.poll() is None:
                    return process
                self._started -= 1
            if self._started >= MAX_KEPT_PROCESSES:
                return None
            self._started += 1
        return subprocess.Popen(
            [str(PYTHON), str(SERVER)],
            cwd=REPO,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )

    def _give_back(self, process: subprocess.Popen[str]) -> None:
        """``process`` is idle again: kept for the next command, or ended when the runner has stopped."""
        with self._lock:
            if not self._stopped:
                self._idle.append(process)
                return
        self._retire(process)

    def _retire(self, process: subprocess.Popen[str]) -> None:
        with self._lock:
            self._started -= 1
        self._end(process)

    def stop(self) -> None:
        """End the idle long-lived processes (a command still running ends its own when it returns)."""
        with self._lock:
            self._stopped = True
            idle, self._idle = self._idle, []
        for process in idle:
            self._retire(process)

    @staticmethod
    def _end(process: subprocess.Popen[str]) -> None:
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        if process.stdout is not None:
            process.stdout.close()
