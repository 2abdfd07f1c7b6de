"""Markdown from a run's raw results: the full report in bench/results/ and the summary in docs/performance.md.

``python -m bench.report bench/results/<run>.json`` regenerates both from a saved run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

JSONObject = dict[str, Any]
BEGIN = "<!-- bench-summary:begin (written by bench/report.py) -->"
END = "<!-- bench-summary:end -->"
ERAS = ("stateless", "handshake")


# ---- formatting ----------------------------------------------------------------------------------------


def find(rows: Iterable[JSONObject], **keys: Any) -> JSONObject | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in keys.items())), None)


def median(row: JSONObject | None, key: str) -> float | None:
    if not row or "summary" not in row or row["summary"].get(key) is None:
        return None
    value: float = row["summary"][key]["median"]
    return value


def ceiling_rps(row: JSONObject | None) -> float | None:
    """A bare server's req/s: wrk's when it ran (our Python client saturates before the fastest servers do)."""
    if row and row.get("wrk_rps"):
        value: float = row["wrk_rps"]
        return value
    return median(row, "rps")


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def f_rps(row: JSONObject | None) -> str:
    if not row:
        return "—"
    if "error" in row:
        return "failed"
    value = row["summary"]["rps"]
    return f"{value['median']:,.0f} ({value['min']:,.0f}-{value['max']:,.0f})"


def f_ms(us: float | None) -> str:
    if us is None:
        return "—"
    return f"{us / 1000:.2f}" if us < 100_000 else f"{us / 1000:.0f}"


def f_x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def f_num(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def f_pct(row: JSONObject | None) -> str:
    value = median(row, "client_cpu_util")
    return "—" if value is None else f"{value:.0%}"


def table(header: list[str], lines: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return [*out, ""]


def mark(met: bool | None) -> str:
    return "—" if met is None else ("met" if met else "not met")


# ---- sections ------------------------------------------------------------------------------------------


def targets(results: JSONObject) -> list[str]:
    rows, rec = results["rows"], results["recommended"]
    lines: list[list[str]] = []
    for era in ERAS:
        for tool in results["profile"]["tools"]:
            ours = find(rows, workload="tools_call", system="ours", server=rec, era=era, case=tool, concurrency=16)
            peer = find(rows, workload="tools_call", system="peer", era=era, case=tool, concurrency=16)
            rps = ratio(median(ours, "rps"), median(peer, "rps"))
            p99 = ratio(median(ours, "p99_us"), median(peer, "p99_us"))
            met = None if rps is None or p99 is None else rps >= 2 and p99 <= 0.5
            lines.append(
                [
                    f"tools/call {tool}, {era}, c=16 on {rec}: ≥ 2x peer req/s, p99 ≤ ½ peer's",
                    f"{f_x(rps)} req/s, {f_x(p99)} p99",
                    mark(met),
                ]
            )
    ours_setup = find(rows, workload="session_setup", system="ours", server=rec, era="handshake")
    peer_setup = find(rows, workload="session_setup", system="peer", era="handshake")
    setups = ratio(median(ours_setup, "rps"), median(peer_setup, "rps"))
    lines.append(
        [
            f"handshake session set-up (initialize + initialized + DELETE), c=16 on {rec}: ≥ 1x peer",
            f"{f_x(setups)} per second",
            mark(None if setups is None else setups >= 1),
        ]
    )
    bare = find(rows, workload="ceiling", server="daphne")
    for era in ERAS:
        ours = find(
            rows, workload="tools_call", system="ours", server="daphne", era=era, case="static_info", concurrency=16
        )
        share = ratio(median(ours, "rps"), ceiling_rps(bare))
        lines.append(
            [
                f"daphne, tools/call static_info, {era}, c=16: ≥ 60% of bare daphne",
                "—" if share is None else f"{share:.0%}",
                mark(None if share is None else share >= 0.6),
            ]
        )
    for era in ERAS:
        for case in ("burst", "paced 10 ms"):
            row = find(rows, workload="progress", system="ours", era=era, case=case)
            p50 = (row or {}).get("progress", {}).get("p50_us")
            lines.append(
                [f"progress p50 < 5 ms, {era}, {case}", f"{f_ms(p50)} ms", mark(None if p50 is None else p50 < 5000)]
            )
    # Constant: the same statements per request whatever the page and the catalog size (3 or 10,000 tools).
    listed = [
        r["queries"]
        for r in rows
        if r["workload"] == "queries" and r["era"] == "stateless" and r["case"].startswith("tools/list")
    ]
    means = [c["statements_per_request"] for c in listed]
    constant = None if len(means) < 2 else max(means) - min(means) < 0.5
    for era in ERAS:
        row = find(rows, workload="tools_list", system="ours", era=era)
        p50 = median(row, "p50_us")
        lines.append(
            [
                f"tools/list, 10,000 tools, first page, {era}: p50 < 10 ms",
                f"{f_ms(p50)} ms",
                mark(None if p50 is None else p50 < 10_000),
            ]
        )
    shown = " / ".join(f"{m:.1f}" for m in means) if means else "—"
    lines.append(
        [
            "tools/list, stateless: constant statements per request (10,000 tools first page / second page / 3 tools)",
            shown,
            mark(constant),
        ]
    )
    idle = find(rows, workload="memory", system="ours", case="idle sessions")
    kb = (idle or {}).get("memory", {}).get("kb_per_item")
    lines.append(["idle handshake session < 20 KB", f"{f_num(kb, 1)} KB", mark(None if kb is None else kb < 20)])
    one, two = (find(rows, workload="scaling", processes=n) for n in (1, 2))
    scale = ratio(median(two, "rps"), median(one, "rps"))
    lines.append(
        ["req/s scaling with web processes (2 vs 1)", f_x(scale), mark(None if scale is None else scale > 1.5)]
    )
    return table(["target", "where we stand", "status"], lines)


def tools_call(results: JSONObject, workload: str = "tools_call") -> list[str]:
    rows, rec = results["rows"], results["recommended"]
    lines = []
    for row in rows:
        if row["workload"] != workload or row["system"] != "ours" or row["server"] != rec:
            continue
        peer = find(
            rows, workload=workload, system="peer", era=row["era"], case=row["case"], concurrency=row["concurrency"]
        )
        lines.append(
            [
                row["era"],
                row["case"],
                str(row["concurrency"]),
                f_rps(row),
                f_rps(peer),
                f_x(ratio(median(row, "rps"), median(peer, "rps"))),
                f_ms(median(row, "p50_us")),
                f_ms(median(peer, "p50_us")),
                f_ms(median(row, "p99_us")),
                f_ms(median(peer, "p99_us")),
                f_x(ratio(median(row, "p99_us"), median(peer, "p99_us"))),
                f_num(median(row, "server_cpu_us")),
                f_num(median(peer, "server_cpu_us")),
                f_num(median(row, "db_cpu_us")),
            ]
        )
    header = [
        "era",
        "case",
        "c",
        "ours req/s",
        "peer req/s",
        "req/s ours/peer",
        "ours p50 ms",
        "peer p50 ms",
        "ours p99 ms",
        "peer p99 ms",
        "p99 ours/peer",
        "ours CPU µs/req",
        "peer CPU µs/req",
        "PostgreSQL CPU µs/req",
    ]
    return table(header, lines)


def tools_list(results: JSONObject) -> list[str]:
    rows = results["rows"]
    lines = []
    for era in ERAS:
        for system in ("ours", "peer"):
            row = find(rows, workload="tools_list", system=system, era=era)
            if row:
                lines.append(
                    [
                        era,
                        system,
                        row["case"],
                        f_ms(median(row, "p50_us")),
                        f_ms(median(row, "p99_us")),
                        f_rps(row),
                        f_num(row.get("body_bytes")),
                        f_num(median(row, "server_cpu_us")),
                    ]
                )
    header = ["era", "system", "response", "p50 ms", "p99 ms", "req/s (c=1)", "bytes", "server CPU µs/req"]
    return table(header, lines)


def progress(results: JSONObject) -> list[str]:
    rows = results["rows"]
    lines = []
    for row in rows:
        if row["workload"] == "progress" and row["system"] == "ours":
            peer = find(rows, workload="progress", system="peer", era=row["era"], case=row["case"])
            ours_p, peer_p = row.get("progress", {}), (peer or {}).get("progress", {})
            lines.append(
                [
                    row["era"],
                    row["case"],
                    f_ms(ours_p.get("p50_us")),
                    f_ms(ours_p.get("p99_us")),
                    f_ms(peer_p.get("p50_us")),
                    f_ms(peer_p.get("p99_us")),
                    f"{ours_p.get('samples', 0)}/{ours_p.get('expected', '?')}",
                    f"{peer_p.get('samples', 0)}/{peer_p.get('expected', '?')}",
                ]
            )
    header = [
        "era",
        "emission",
        "ours p50 ms",
        "ours p99 ms",
        "peer p50 ms",
        "peer p99 ms",
        "ours received",
        "peer received",
    ]
    return table(header, lines)


def memory(results: JSONObject) -> list[str]:
    rows = results["rows"]
    lines = []
    for row in rows:
        if row["workload"] == "memory" and row["system"] == "ours":
            peer = find(rows, workload="memory", system="peer", case=row["case"])

            def kb(r: JSONObject | None) -> str:
                found = (r or {}).get("memory")
                return "failed" if r and "error" in r else f_num((found or {}).get("kb_per_item"), 1)

            count = (row.get("memory") or {}).get("count", "—")
            lines.append([row["case"], row["era"], str(count), kb(row), kb(peer)])
    return table(["what is open", "era", "count", "ours KB each", "peer KB each"], lines)


def queries(results: JSONObject) -> list[str]:
    lines = [
        [
            r["case"],
            r["era"],
            f"{r['queries']['statements_per_request']:.2f}",
            f"{r['queries']['min']}-{r['queries']['max']}",
            str(r["queries"]["new_connections"]),
        ]
        for r in results["rows"]
        if r["workload"] == "queries"
    ]
    return table(["request", "era", "statements/request", "min-max", "new connections"], lines)


def servers(results: JSONObject) -> list[str]:
    rows = results["rows"]
    lines = []
    for server in results["servers"]:
        bare = find(rows, workload="ceiling", server=server)
        for row in rows:
            if row["workload"] == "tools_call" and row["system"] == "ours" and row["server"] == server:
                if row["concurrency"] != 16:
                    continue
                share = ratio(median(row, "rps"), ceiling_rps(bare))
                lines.append(
                    [
                        server,
                        row["era"],
                        row["case"],
                        f_rps(row),
                        f_ms(median(row, "p99_us")),
                        f_num(median(row, "server_cpu_us")),
                        "—" if share is None else f"{share:.0%}",
                    ]
                )
    header = ["server", "era", "tool", "ours req/s (c=16)", "p99 ms", "CPU µs/req", "share of bare ceiling"]
    return table(header, lines)


def ceilings(results: JSONObject) -> list[str]:
    lines = []
    for row in results["rows"]:
        if row["workload"] == "ceiling":
            lines.append(
                [
                    row["server"],
                    f_rps(row),
                    f_num(row.get("wrk_rps")),
                    f_ms(median(row, "p50_us")),
                    f_ms(median(row, "p99_us")),
                    f_num(median(row, "server_cpu_us")),
                    f_pct(row),
                ]
            )
    for row in results["rows"]:
        if row["workload"] == "wrk_check":
            ours = find(
                results["rows"],
                workload="tools_call",
                system=row["system"],
                server=row["server"],
                era=row["era"],
                case=row["case"],
                concurrency=16,
            )
            lines.append(
                [
                    f"{row['system']} ({row['server']}) tools/call {row['case']}, {row['era']}",
                    f_rps(ours),
                    f_num(row["wrk_rps"]),
                    f_ms(median(ours, "p50_us")),
                    f_ms(median(ours, "p99_us")),
                    f_num(median(ours, "server_cpu_us")),
                    f_pct(ours),
                ]
            )
    header = [
        "server (c=16)",
        "req/s (our load generator)",
        "req/s (wrk)",
        "p50 ms",
        "p99 ms",
        "CPU µs/req",
        "load generator CPU",
    ]
    return table(header, lines)


def scaling(results: JSONObject) -> list[str]:
    rows = [r for r in results["rows"] if r["workload"] == "scaling"]
    one = find(rows, processes=1)
    lines = [
        [
            str(r["processes"]),
            f_rps(r),
            f_x(ratio(median(r, "rps"), median(one, "rps"))),
            f_ms(median(r, "p99_us")),
            r.get("pinning", "—"),
        ]
        for r in rows
    ]
    return table(["web processes", "req/s (c=16)", "vs 1 process", "p99 ms", "pinning"], lines)


def _throughput(row: JSONObject, side_by_side: bool) -> float | None:
    """A process's throughput in one round of ``activity_log``. Side by side, the scheduler shares the core between
    threads, not processes: the log's writer thread wins its process a little more of the core than the other gets.
    So it is read from the CPU each request takes, which sets a process's req/s when it has a core to itself;
    measured in turn, from the req/s."""
    if not side_by_side:
        return median(row, "rps")
    cpu = median(row, "server_cpu_us")
    return 1 / cpu if cpu else None


def activity_log(results: JSONObject) -> list[str]:
    """The activity log's cost: the same tools/call with it off and on, two processes sharing the server core and
    loaded at the same time, round after round (target: at most 5% fewer req/s). The change is the median of the
    rounds' changes in throughput, from CPU per request; req/s and CPU are medians of rounds. (Runs before
    2026-11-26 measured the two in turn, and took the change from req/s.)"""
    rows = [r for r in results["rows"] if r["workload"] == "activity_log" and "summary" in r]
    lines = []
    for era in ERAS:
        off = {r.get("round", 1): r for r in rows if r["era"] == era and r["case"] == "static_info, log off"}
        on = {r.get("round", 1): r for r in rows if r["era"] == era and r["case"] == "static_info, log on"}
        rounds = sorted(set(off) & set(on))
        side_by_side = all(on[n].get("side_by_side") for n in rounds)
        changes = [ratio(_throughput(on[n], side_by_side), _throughput(off[n], side_by_side)) for n in rounds]
        kept = [c for c in changes if c is not None]
        if not kept:
            continue
        change = statistics.median(kept)

        def of(side: dict[int, JSONObject], key: str, rounds: list[int] = rounds) -> float | None:
            values = [v for n in rounds if (v := median(side[n], key)) is not None]
            return statistics.median(values) if values else None

        lines.append(
            [
                era,
                str(len(rounds)),
                f_num(of(off, "rps")),
                f_num(of(on, "rps")),
                f"{change - 1:+.1%} {mark(change >= 0.95)}",
                ", ".join(f"{c - 1:+.1%}" for c in kept),
                f_ms(of(off, "p99_us")),
                f_ms(of(on, "p99_us")),
                f_num(of(off, "server_cpu_us")),
                f_num(of(on, "server_cpu_us")),
                f_num(of(off, "db_cpu_us")),
                f_num(of(on, "db_cpu_us")),
            ]
        )
    header = [
        "era (c=16)",
        "rounds",
        "log off req/s",
        "log on req/s",
        "change (median)",
        "each round",
        "p99 off",
        "p99 on",
        "web CPU µs off",
        "web CPU µs on",
        "PostgreSQL CPU µs off",
        "PostgreSQL CPU µs on",
    ]
    return table(header, lines)


def conditions(results: JSONObject) -> list[str]:
    machine, git, profile = results["machine"], results["git"], results["profile"]
    load = ", ".join(f"{x:.2f}" for x in machine["load_average"])
    load_end = ", ".join(f"{x:.2f}" for x in machine["load_average_at_end"])
    version_list = ", ".join(f"{k} {v}" for k, v in results["versions"].items())
    windows = f"{profile['windows']} windows x {profile['window']:g} s after {profile['warmup']:g} s warm-up"
    dirty = " (uncommitted changes)" if git["dirty"] else ""
    lines = [
        f"- Run `{results['run_id']}`, {results['started']}, {results['minutes']} min, "
        f"profile `{profile['name']}` ({windows}).",
        f"- Machine: {machine['cpus']} x {machine['cpu_model']}; {machine['pinning']}; load average {load} at start, "
        f"{load_end} at end.",
        f"- Code: `{git['branch']}` at `{git['commit']}`{dirty}; {version_list}.",
        f"- Recommended server: {results['recommended']}; servers measured: {', '.join(results['servers'])}.",
    ]
    if results.get("note"):
        lines.append(f"- **Note: {results['note']}**")
    for failure in results.get("failures", []):
        lines.append(f"- **Failed:** {failure.splitlines()[0]}")
    if results.get("skipped"):
        lines.append(f"- Skipped (time budget): {', '.join(results['skipped'])}.")
    failed = [r for r in results["rows"] if "error" in r or r.get("errors")]
    for row in failed:
        lines.append(
            f"- Errors in {row['workload']} {row['system']}/{row['server']} {row.get('era')} {row.get('case')}: "
            f"{row.get('error') or row.get('first_error')}"
        )
    return [*lines, ""]


def launch(results: JSONObject) -> list[str]:
    return [f"- {name}: `{argv}`" for name, argv in results["launch"].items()] + [""]


Section = tuple[str, Callable[[JSONObject], list[str]]]
SUMMARY: list[Section] = [
    ("Where we stand", targets),
    ("tools/call, one web process, recommended server vs the SDK peer", tools_call),
    (
        "Session set-up (handshake: initialize + initialized, then DELETE; stateless: server/discover)",
        lambda r: tools_call(r, "session_setup"),
    ),
    ("tools/list on a tenant with 10,000 tools (c=1)", tools_list),
    ("Progress latency, tool → client (100 notifications per call)", progress),
    ("Memory (RSS of the web process)", memory),
]
DETAIL: list[Section] = [
    ("Database statements per request (counted on the wire)", queries),
    ("Our platform under each ASGI server", servers),
    ("Bare-ASGI ceilings and load-generator checks", ceilings),
    ("Scaling with web processes", scaling),
    ("Activity log off vs on (tools/call static_info)", activity_log),
    ("How each server was started", launch),
]


def sections(results: JSONObject, chosen: list[Section], level: str) -> list[str]:
    out = []
    for title, render_section in chosen:
        out += [f"{level} {title}", "", *render_section(results)]
    return out


def render(results: JSONObject) -> str:
    out = [f"# Benchmark {results['run_id']}", "", *conditions(results)]
    out += ["Figures are medians over the windows, with (min-max) for req/s. Latencies in ms.", ""]
    out += sections(results, SUMMARY + DETAIL, "##")
    return "\n".join(out).rstrip() + "\n"


def summary(results: JSONObject, link: str) -> str:
    out = [f"Latest run: [{results['run_id']}]({link}).", "", *conditions(results)]
    out += sections(results, SUMMARY, "###")
    return "\n".join(out).rstrip()


def update_docs(results: JSONObject, docs: Path, link: str) -> None:
    """Replace the generated part of ``docs`` (between the markers) with this run's summary."""
    text = docs.read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{docs} has no {BEGIN!r} … {END!r} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    docs.write_text(f"{head}{BEGIN}\n\n{summary(results, link)}\n\n{END}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("raw", type=Path, help="bench/results/<run>.json")
    parser.add_argument("--docs", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "performance.md")
    args = parser.parse_args()
    results = json.loads(args.raw.read_text())
    markdown = args.raw.with_suffix(".md")
    markdown.write_text(render(results))
    update_docs(results, args.docs, os.path.relpath(markdown, args.docs.parent))
    print(f"wrote {markdown} and {args.docs}")


if __name__ == "__main__":
    main()
