"""Finding the processes a test run started, wherever they ended up: by a mark in their environment.

Every process a test starts inherits the environment, so a variable set to a value unique to the run (or to one
test) marks all of them and their children, even those reparented to init after their parent died.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from contextlib import suppress
from pathlib import Path

# Set for the whole test run (``tests/conftest.py``); processes left at the end of the session fail it.
RUN_MARK = "MCP_TEST_RUN"
# Set by a test in the environment of the processes it starts, to find exactly those.
TEST_MARK = "MCP_TEST_PROCESS"

PROC = Path("/proc")


def new_mark() -> str:
    return secrets.token_hex(8)


def marked_processes(name: str, value: str) -> dict[int, str]:
    """Processes other than this one whose environment has ``name=value``: their command lines by pid."""
    wanted = f"{name}={value}".encode()
    found: dict[int, str] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environment = (entry / "environ").read_bytes().split(b"\0")
            if wanted in environment:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return {pid: command for pid, command in found.items() if not is_zombie(pid)}


def is_zombie(pid: int) -> bool:
    """A process that has exited and waits for its parent to collect its status holds nothing; it is not left."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def wait_for_marked(name: str, value: str, *, count: int, timeout: float) -> dict[int, str]:
    """Poll until at least ``count`` processes carry the mark; those found (fewer on timeout)."""
    deadline = time.monotonic() + timeout
    found = marked_processes(name, value)
    while len(found) < count and time.monotonic() < deadline:
        time.sleep(0.1)
        found = marked_processes(name, value)
    return found


def wait_until_none_marked(name: str, value: str, *, timeout: float) -> dict[int, str]:
    """Poll until no process carries the mark; those still running at the deadline."""
    deadline = time.monotonic() + timeout
    left = marked_processes(name, value)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = marked_processes(name, value)
    return left


def kill_all(pids: dict[int, str]) -> None:
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
