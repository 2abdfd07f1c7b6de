"""``manage.py serve``: which topologies may run several web processes, and the servers it knows."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from mcp_infra.serving.servers import DEFAULT_SERVER, RUNNERS, SERVERS
from mcp_platform.gateway.management.commands.serve import multi_process_refusal

POSTGRES = "django.db.backends.postgresql"
REDIS = "redis://127.0.0.1:6379/0"


def test_several_workers_are_refused_on_embedded_defaults(settings: Any) -> None:
    settings.CELERY_EMBEDDED_WORKER = True
    settings.REDIS_URL = ""

    with pytest.raises(CommandError, match="REDIS_URL"):
        call_command("serve", no_migrate=True, workers=2)


def test_a_worker_count_below_one_is_refused() -> None:
    with pytest.raises(CommandError, match="at least 1"):
        call_command("serve", no_migrate=True, workers=0)


@pytest.mark.parametrize(
    ("server", "embedded_worker", "redis_url", "engine", "refusal"),
    [
        ("uvicorn", True, "", "django.db.backends.sqlite3", "REDIS_URL"),
        ("uvicorn", False, REDIS, "django.db.backends.sqlite3", "PostgreSQL"),
        ("granian", False, REDIS, POSTGRES, "granian"),
        ("uvicorn", False, REDIS, POSTGRES, None),
        ("daphne", False, REDIS, POSTGRES, None),
    ],
)
def test_only_the_production_topology_runs_several_web_processes(
    server: str, embedded_worker: bool, redis_url: str, engine: str, refusal: str | None
) -> None:
    found = multi_process_refusal(
        server=server, embedded_worker=embedded_worker, redis_url=redis_url, database_engine=engine
    )
    assert (found is None) if refusal is None else (found is not None and refusal in found)


def test_every_server_offered_has_a_runner_and_uvicorn_is_the_default() -> None:
    assert set(SERVERS) == set(RUNNERS)
    assert DEFAULT_SERVER == "uvicorn"
