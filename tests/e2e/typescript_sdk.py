"""The official TypeScript SDK for tests that run copied code with Node: installed once into the repository's cache
(the npm registry is needed; a machine without it fails those tests, as CI would), under a lock every test process
of a run shares."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TYPESCRIPT_SDK = "@modelcontextprotocol/sdk@1.32.2"
TYPESCRIPT_SDK_DIR = REPO / ".cache" / "node" / "sdk-1.32.2"
NPM_TIMEOUT = 300.0


def typescript_project(directory: Path) -> Path:
    """``directory`` made a Node project that has the TypeScript SDK (a link to the cached install)."""
    TYPESCRIPT_SDK_DIR.mkdir(parents=True, exist_ok=True)
    with open(TYPESCRIPT_SDK_DIR / "install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (TYPESCRIPT_SDK_DIR / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json").exists():
            npm = shutil.which("npm")
            assert npm, "npm is missing: install Node.js (node 20 or later)"
            install = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(TYPESCRIPT_SDK_DIR), TYPESCRIPT_SDK]
            done = subprocess.run(install, capture_output=True, text=True, timeout=NPM_TIMEOUT)
            assert done.returncode == 0, f"npm could not install {TYPESCRIPT_SDK}:\n{done.stdout}\n{done.stderr}"
    (directory / "node_modules").symlink_to(TYPESCRIPT_SDK_DIR / "node_modules")
    return directory
