"""The health probes' paths (``/healthz`` and ``/readyz``, answered by ``mcp_platform.telemetry.health``), which the
servers' access logs leave out: an orchestrator asks every few seconds, and a line per probe would bury the
requests people read the log for."""

from __future__ import annotations

import logging

LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
PROBE_PATHS = frozenset({LIVENESS_PATH, READINESS_PATH})


def is_probe(path: str) -> bool:
    """Whether ``path`` (a query string allowed) is a probe's."""
    return path.partition("?")[0] in PROBE_PATHS


class ProbeLinesFilter(logging.Filter):
    """Drops the access-log records of probes: uvicorn's (``uvicorn.access``: client, method, path, version,
    status) and granian's (``granian.access``: one dict of fields)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        path = None
        if isinstance(args, tuple) and len(args) >= 3:
            path = args[2]
        elif isinstance(args, dict):
            path = args.get("path")
        return not (isinstance(path, str) and is_probe(path))
