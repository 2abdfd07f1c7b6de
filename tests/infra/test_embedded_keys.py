"""Keys an embedded installation makes for itself under its var directory: made once, whole, and kept."""

from __future__ import annotations

import threading
from pathlib import Path

from mcp_platform.settings import _write_once


def test_the_first_key_written_is_kept_and_no_draft_is_left(tmp_path: Path) -> None:
    key = tmp_path / "secret_key"

    _write_once(key, "first")
    _write_once(key, "second")

    assert key.read_text() == "first"
    assert key.stat().st_mode & 0o777 == 0o600
    assert sorted(path.name for path in tmp_path.iterdir()) == ["secret_key"]


def test_starts_at_one_moment_all_read_one_whole_key(tmp_path: Path) -> None:
    key = tmp_path / "secret_key"
    start = threading.Barrier(8)
    read: list[str] = []

    def first_start(text: str) -> None:
        start.wait()
        _write_once(key, text)
        read.append(key.read_text())

    threads = [threading.Thread(target=first_start, args=(f"key-{n}" * 1000,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(set(read)) == 1 and len(read) == 8
    assert read[0] == key.read_text() and len(read[0]) == len("key-0" * 1000)
