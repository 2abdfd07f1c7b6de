"""Instructions per request, counted by callgrind over ``bench.inprocess``: the figure here that a shared or noisy
machine moves least.

    DATABASE_URL=… REDIS_URL=… python -m bench.instructions --era handshake --tool echo [--env MCP_ACTIVITY_LOG=0]

Two runs with different numbers of calls (``--calls``, default 200 and 1000) run side by side under
``valgrind --tool=callgrind``; the difference of their totals divided by the difference of their calls is the
figure, start-up and warm-up cancelled. Both runs fix ``PYTHONHASHSEED``: with random string hashing, the same run
varied by up to 100 million instructions (dictionary layouts differ), with it two identical runs agreed to within
about 0.002% on an idle machine; on a loaded one to within about 30 million (connections are still recycled at most
once a second of wall time, which under callgrind is every few calls). A plain run first compiles any missing
bytecode, which would otherwise land in one run only.

Work done on a clock does not cancel out: the larger run lasts longer, and under callgrind (about 50 times slower)
a once-a-second flush or a 5-second revalidation falls on 50 times fewer calls than in a real process. So the
clocks are set past the length of a run (``STRETCHED``; ``--env`` overrides any): the figure is the request path
itself, without the activity writer's sending and the metrics fold (each under a microsecond a call in a real
process). It prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TOTALS = re.compile(r"^totals:\s*(\d+)", re.MULTILINE)
# The platform's clocks, set past the length of a run under callgrind (see the module docstring).
STRETCHED = {
    "MCP_TENANT_CACHE_SECONDS": "3600",
    "MCP_SESSION_CACHE_SECONDS": "3600",
    "MCP_ACTIVITY_FLUSH_SECONDS": "3600",
    "MCP_METRICS_FOLD_SECONDS": "3600",
}


def _inprocess(args: argparse.Namespace, calls: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "bench.inprocess",
        "--era",
        args.era,
        "--tool",
        args.tool,
        "--calls",
        str(calls),
        "--warmup",
        str(args.warmup),
        "--concurrency",
        str(args.concurrency),
    ]


def count(args: argparse.Namespace, env: dict[str, str], directory: Path) -> dict[str, object]:
    """Run both sizes under callgrind and return the per-call figure with the raw totals."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    subprocess.run(_inprocess(args, 10), env=env, check=True, stdout=subprocess.DEVNULL)
    runs = {}
    for calls in args.calls:
        out = directory / f"callgrind-{calls}.out"
        argv = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", *_inprocess(args, calls)]
        runs[calls] = (out, subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    totals = {}
    for calls, (out, process) in runs.items():
        if process.wait() != 0:
            raise SystemExit(f"the run of {calls} calls failed (exit {process.returncode})")
        found = TOTALS.search(out.read_text(errors="replace"))
        if found is None:
            raise SystemExit(f"no totals in {out}")
        totals[calls] = int(found.group(1))
    small, large = sorted(totals)
    return {
        "era": args.era,
        "tool": args.tool,
        "concurrency": args.concurrency,
        "env": args.env,
        "totals": {str(calls): total for calls, total in sorted(totals.items())},
        "instructions_per_call": round((totals[large] - totals[small]) / (large - small)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__)
    parser.add_argument("--era", choices=("handshake", "stateless"), default="handshake")
    parser.add_argument("--tool", default="echo")
    parser.add_argument("--calls", type=int, nargs=2, default=[200, 1000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="Set for both runs.")
    parser.add_argument("--hash-seed", default="0", help="PYTHONHASHSEED for both runs (default 0).")
    args = parser.parse_args()
    if args.calls[0] == args.calls[1]:
        parser.error("--calls needs two different sizes")
    env = {**os.environ, **STRETCHED, "PYTHONHASHSEED": args.hash_seed, "LOG_LEVEL": "WARNING"}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--env wants NAME=VALUE, not {item!r}")
        env[name] = value
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as directory:
        print(json.dumps(count(args, env, Path(directory))))


if __name__ == "__main__":
    main()
