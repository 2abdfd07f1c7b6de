"""``manage.py`` commands of the end-to-end tests, run by one long-lived process per live platform
(``tests/e2e/command_server.py``) where the test is not about the command itself.

Django's start-up costs a command about 4 s of CPU on these machines; the tests run about a hundred. Only the
commands that change data through the services (``shell -c``, the loaders) go to the long-lived process; the rest
(refreshes and imports that open upstream connections, the serving and worker commands) start a process each, as a
person would run them. A command sent while the long-lived process is busy with another starts a process of its
own too, so commands run concurrently never wait on each other.
"""

from __future__ import annotations

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
KEPT_COMMANDS = frozenset({"shell", "load_demo_tenant", "load_conformance_tenant", "load_bench_tenants", "secret_set"})


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str


class CommandRunner:
    """Runs ``manage.py`` commands with one environment; ``stop`` ends its long-lived process."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = {**env, "PYTHONPATH": str(REPO)}
        self._process: subprocess.Popen[str] | None = None
        self._busy = threading.Lock()

    def run(self, *args: str) -> Outcome:
        """Run ``manage.py *args`` to completion (blocking)."""
        if args and args[0] in KEPT_COMMANDS and self._busy.acquire(blocking=False):
            try:
                return self._run_kept(list(args))
            finally:
                self._busy.release()
        return self._run_alone(list(args))

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

    def _run_kept(self, args: list[str]) -> Outcome:
        process = self._started()
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(args) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        if not line:
            self.stop()
            pytest.fail(f"the long-lived manage.py process ended while running {' '.join(args)}")
        answer = json.loads(line)
        return Outcome(int(answer["code"]), str(answer["stdout"]), str(answer["stderr"]))

    def _started(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [str(PYTHON), str(SERVER)],
                cwd=REPO,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
        return self._process

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        if process.stdout is not None:
            process.stdout.close()
