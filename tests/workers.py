"""Test runs split over pytest-xdist workers (``python -m pytest -p tests.workers -n N``, as ``scripts/test`` does).

Loaded before Django is set up, so that each worker's settings see a place of their own: its own ``MCP_VAR_DIR``
(leases, generated keys, the metrics files) and, on the production path, its own Redis database (channel
layer, cache, Celery broker). pytest-django already gives each worker its own test database. Without ``-n`` this
plugin changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

WORKER_ENV = "PYTEST_XDIST_WORKER"
METRICS_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Redis databases 1…15 go to workers gw0…gw14; the run's database 0 stays the controller's.
REDIS_DATABASES = 16


def worker_number(worker: str) -> int:
    """``gw3`` → 3."""
    return int(worker.removeprefix("gw"))


def worker_redis_url(url: str, worker: str) -> str:
    """The run's Redis URL with the database of ``worker``'s own."""
    number = worker_number(worker) + 1
    if number >= REDIS_DATABASES:
        raise pytest.UsageError(f"at most {REDIS_DATABASES - 1} workers: each needs a Redis database of its own")
    return urlunsplit(urlsplit(url)._replace(path=f"/{number}"))


# A wrapper runs before every plain implementation, pytest-django's (which imports the settings) among them.
@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> Generator[None]:
    """Before pytest-django imports the settings: point this worker at its own directory and Redis database."""
    worker = os.environ.get(WORKER_ENV)
    if worker:
        _own_places(worker)
    return (yield)


def _own_places(worker: str) -> None:
    base = os.environ.get("MCP_VAR_DIR")
    if base:
        own = Path(base) / worker
        own.mkdir(parents=True, exist_ok=True)
        os.environ["MCP_VAR_DIR"] = str(own)
        # The settings put metrics under the var dir unless told otherwise, and say so in the environment the workers
        # inherited from the process that started them: a shared directory would count every worker's requests.
        if os.environ.get(METRICS_ENV) == str(Path(base) / "prometheus"):
            os.environ[METRICS_ENV] = str(own / "prometheus")
    if os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"], worker)


def distributing(config: pytest.Config) -> bool:
    """Whether this process hands the tests to workers rather than running them."""
    return config.pluginmanager.hasplugin("dsession")
