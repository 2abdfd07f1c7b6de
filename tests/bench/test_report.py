"""The report puts ours beside the peer with the right ratios, and rewrites only its part of the docs page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.report import BEGIN, END, render, update_docs

JSONObject = dict[str, Any]


def closed_loop(system: str, server: str, era: str, rps: float, p99_us: float, **keys: Any) -> JSONObject:
    window = {"rps": rps, "p50_us": p99_us / 4, "p99_us": p99_us, "server_cpu_us": 1e6 / rps}
    summary = {key: {"median": value, "min": value, "max": value} for key, value in window.items()}
    return {
        "workload": "tools_call",
        "system": system,
        "server": server,
        "era": era,
        "case": "static_info",
        "concurrency": 16,
        "processes": 1,
        "windows": [window],
        "summary": summary,
        "errors": 0,
        **keys,
    }


@pytest.fixture
def results() -> JSONObject:
    rows = [
        closed_loop("ours", "uvicorn", "stateless", 3000.0, 4000.0),
        closed_loop("peer", "uvicorn", "stateless", 1000.0, 10000.0),
        closed_loop("ours", "uvicorn", "handshake", 1500.0, 9000.0),
        closed_loop("peer", "uvicorn", "handshake", 1000.0, 10000.0),
        {
            "workload": "memory",
            "system": "ours",
            "server": "uvicorn",
            "era": "handshake",
            "case": "idle sessions",
            "memory": {"count": 1000, "rss_before_kb": 1000, "rss_after_kb": 3500, "kb_per_item": 2.5},
        },
    ]
    return {
        "run_id": "2026-01-01-0000-quick",
        "started": "2026-01-01T00:00:00+00:00",
        "minutes": 2.0,
        "profile": {"name": "quick", "windows": 2, "window": 1.0, "warmup": 0.5, "tools": ["static_info"]},
        "note": "taken on a loaded machine",
        "recommended": "uvicorn",
        "servers": ["uvicorn"],
        "machine": {
            "cpus": 2,
            "cpu_model": "test",
            "pinning": "not pinned",
            "load_average": [1.0, 1.0, 1.0],
            "load_average_at_end": [2.0, 2.0, 2.0],
        },
        "versions": {"python": "3.11"},
        "git": {"branch": "bench", "commit": "abc1234", "dirty": False},
        "launch": {"ours/uvicorn": "uvicorn mcp_platform.asgi:application"},
        "skipped": [],
        "rows": rows,
    }


def test_targets_compare_ours_with_the_peer_on_the_same_era(results: JSONObject) -> None:
    text = render(results)

    stateless = next(line for line in text.splitlines() if line.startswith("| tools/call static_info, stateless"))
    handshake = next(line for line in text.splitlines() if line.startswith("| tools/call static_info, handshake"))
    assert "3.00x req/s, 0.40x p99 | met" in stateless
    assert "1.50x req/s, 0.90x p99 | not met" in handshake
    assert "| idle handshake session < 20 KB | 2.5 KB | met |" in text
    assert "**Note: taken on a loaded machine**" in text


def test_docs_summary_replaces_only_the_generated_part(tmp_path: Path, results: JSONObject) -> None:
    docs = tmp_path / "performance.md"
    docs.write_text(f"# Performance\n\nHow we measure.\n\n{BEGIN}\nold figures\n{END}\n\nAfterword.\n")

    update_docs(results, docs, "../bench/results/2026-01-01-0000-quick.md")
    update_docs(results, docs, "../bench/results/2026-01-01-0000-quick.md")

    text = docs.read_text()
    assert text.startswith("# Performance\n\nHow we measure.\n\n")
    assert text.endswith(f"{END}\n\nAfterword.\n")
    assert "old figures" not in text
    assert text.count("Latest run: [2026-01-01-0000-quick](../bench/results/2026-01-01-0000-quick.md)") == 1


def test_docs_without_markers_are_left_alone(tmp_path: Path, results: JSONObject) -> None:
    docs = tmp_path / "performance.md"
    docs.write_text("# Performance\n")

    with pytest.raises(ValueError, match="markers"):
        update_docs(results, docs, "x.md")
    assert docs.read_text() == "# Performance\n"


def test_the_activity_log_section_compares_off_and_on(results: JSONObject) -> None:
    results["rows"] += [
        closed_loop(
            "ours", "uvicorn", "stateless", 3000.0, 4000.0, workload="activity_log", case="static_info, log off"
        ),
        closed_loop(
            "ours", "uvicorn", "stateless", 2910.0, 4100.0, workload="activity_log", case="static_info, log on"
        ),
        closed_loop(
            "ours", "uvicorn", "handshake", 1000.0, 9000.0, workload="activity_log", case="static_info, log off"
        ),
        closed_loop("ours", "uvicorn", "handshake", 900.0, 9500.0, workload="activity_log", case="static_info, log on"),
    ]
    report = render(results)
    section = report.split("## Activity log off vs on")[1]
    assert "| stateless |" in section and "-3.0% met" in section
    assert "| handshake |" in section and "-10.0% not met" in section


def test_the_activity_log_change_is_the_median_of_the_rounds_changes(results: JSONObject) -> None:
    # Round 2 ran while the machine was busy: both sides slowed alike, and its change is the middle one.
    pairs = {1: (4000.0, 3960.0), 2: (2000.0, 1940.0), 3: (4100.0, 3690.0)}
    for round_, (off, on) in pairs.items():
        for case, rps in (("static_info, log off", off), ("static_info, log on", on)):
            row = closed_loop("ours", "uvicorn", "stateless", rps, 5000.0, workload="activity_log", case=case)
            results["rows"].append({**row, "round": round_})
    section = render(results).split("## Activity log off vs on")[1].split("##")[0]
    [line] = [line for line in section.splitlines() if line.startswith("| stateless |")]
    cells = [cell.strip() for cell in line.split("|")[1:-1]]
    assert cells[1] == "3" and cells[4] == "-3.0% met"
    assert cells[5] == "-1.0%, -3.0%, -10.0%"
    assert (cells[2], cells[3]) == ("4,000", "3,690")  # the median of each side's rounds
    assert "| PostgreSQL CPU µs off | PostgreSQL CPU µs on |" in section, "the database's share is shown apart"


def test_side_by_side_the_activity_log_cost_is_read_from_cpu_per_request(results: JSONObject) -> None:
    # Sharing a core, the log-on process's writer thread won it a larger share: its req/s fell 2%, while each of
    # its requests took 6% more CPU, which is what it loses when it has a core to itself.
    for case, rps, cpu in (("static_info, log off", 2500.0, 200.0), ("static_info, log on", 2450.0, 212.0)):
        row = closed_loop("ours", "uvicorn", "stateless", rps, 5000.0, workload="activity_log", case=case)
        row["summary"]["server_cpu_us"] = {"median": cpu, "min": cpu, "max": cpu}
        results["rows"].append({**row, "round": 1, "side_by_side": True})
    section = render(results).split("## Activity log off vs on")[1].split("##")[0]
    [line] = [line for line in section.splitlines() if line.startswith("| stateless |")]
    cells = [cell.strip() for cell in line.split("|")[1:-1]]
    assert cells[4] == "-5.7% not met"
