"""Children that end with their parent (``mcp_infra.serving.processes``); on real processes, since that is what it is
about. Killing a parent for real: tests/e2e/test_process_hygiene.py."""

from __future__ import annotations

import os
import subprocess
import sys

CHILD = (
    "import sys; from mcp_infra.serving.processes import end_with_parent;"
    " end_with_parent(int(sys.argv[1])); print('alive')"
)


def run_child(parent_pid: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, str(parent_pid)], capture_output=True, text=True, timeout=30)


def test_a_child_started_by_its_parent_carries_on() -> None:
    done = run_child(os.getpid())
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "alive"


def test_a_child_whose_parent_is_gone_before_it_asked_exits_at_once() -> None:
    """The parent's death signal is only sent for deaths after the request: a parent already gone (the child
    reparented) is noticed by its pid."""
    not_the_parent = 1
    done = run_child(not_the_parent)
    assert done.returncode == 1
    assert "alive" not in done.stdout
