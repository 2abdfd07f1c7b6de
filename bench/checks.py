"""What is checked and recorded before measuring: the machine, the code, and that both servers are equivalent."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.mcp_wire import ERAS, STATELESS, McpSession, Target
from bench.topology import PYTHON, REPO, Cores, Process

JSONObject = dict[str, Any]
# The same text as tenants/builtin/bench_fixtures.py and bench/peer_server.py; checked on both servers.
STATIC_TEXT = "A fixed answer stored in the catalog."
VERSIONED = ("django", "channels", "daphne", "uvicorn", "granian", "uvloop", "httptools", "mcp", "psycopg", "orjson")


class CheckFailed(Exception):
    """The servers are not equivalent, or not serving what the workloads need."""


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def git_state() -> JSONObject:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)
        return done.stdout.strip()

    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
    }


def serve_servers(env: dict[str, str]) -> tuple[list[str], str | None]:
    """The servers ``manage.py serve --server`` offers and its default; ([], None) without that option."""
    done = subprocess.run(
        [PYTHON, "manage.py", "serve", "--help"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    text = " ".join(done.stdout.split())
    choices = re.search(r"--server \{([\w,]+)\}", text)
    if not choices:
        return [], None
    default = re.search(r"ASGI server \(default (\w+)", text)
    return choices.group(1).split(","), default.group(1) if default else None


def machine_facts(cores: Cores) -> JSONObject:
    return {
        "cpus": os.cpu_count(),
        "cpu_model": next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            "?",
        ),
        "load_average": os.getloadavg(),
        "pinning": cores.describe(),
        "wrk": shutil.which("wrk") is not None,
    }


async def check_equivalent(ours: Target, peer: Target) -> None:
    """Both servers offer the same tools with the same answers, in both eras. Raises ``CheckFailed``."""
    for era in ERAS:
        answers = []
        for endpoint in (ours, peer):
            session = await McpSession.open(endpoint, era)
            try:
                listed = await session.call("tools/list")
                static = await session.call("tools/call", {"name": "static_info", "arguments": {}})
                echo = await session.call("tools/call", {"name": "echo", "arguments": {"message": "same"}})
            finally:
                session.close()
            names = sorted(tool["name"] for tool in listed["tools"])
            answers.append((names, static["content"], echo["content"]))
        if answers[0] != answers[1]:
            raise CheckFailed(f"ours and the peer differ ({era}): {answers[0]} vs {answers[1]}")
        if answers[0][1] != [{"type": "text", "text": STATIC_TEXT}]:
            raise CheckFailed(f"unexpected static_info answer: {answers[0][1]}")


async def check_catalog(endpoint: Target, *, paged: bool) -> int:
    """How many tools the first ``tools/list`` page holds. Raises ``CheckFailed`` unless it is a page with more to
    come (``paged``) or the whole catalog at once."""
    session = await McpSession.open(endpoint, STATELESS)
    try:
        listed = await session.call("tools/list")
    finally:
        session.close()
    count = len(listed["tools"])
    if (paged and "nextCursor" not in listed) or (not paged and ("nextCursor" in listed or count < 1000)):
        raise CheckFailed(
            f"the catalog at {endpoint.path} listed {count} tools ({'a page' if paged else 'all'} expected)"
        )
    return count


def endpoint_of(process: Process, path: str) -> Target:
    return Target("127.0.0.1", process.port or 0, path)
