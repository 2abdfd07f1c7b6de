"""Test runs split over pytest-xdist workers (``python -m pytest -p tests.workers -n N``, as ``scripts/test`` does).

Loaded before Django is set up, so that each worker's settings see a place of their own: its own ``MCP_VAR_DIR``
(leases, generated keys, the metrics files) and, on the production path, its own Redis database (channel
layer, cache, Celery broker). pytest-django already gives each worker its own test database.

What the workers share is the run's prepared databases (``made_once``): the first worker that needs one prepares it
while the others wait, and the process that started the run drops them when it ends.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

WORKER_ENV = "PYTEST_XDIST_WORKER"
METRICS_ENV = "PROMETHEUS_MULTIPROC_DIR"
# The run's directory of prepared databases: SQLite files, and files naming PostgreSQL databases (``*.database``).
TEMPLATES_ENV = "MCP_TEST_TEMPLATES_DIR"
TEMPLATES_KEY = pytest.StashKey[Path]()
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


def pytest_configure(config: pytest.Config) -> None:
    """In the process that starts the run: a directory for the run's prepared databases, which workers inherit."""
    if not os.environ.get(WORKER_ENV) and not os.environ.get(TEMPLATES_ENV):
        config.stash[TEMPLATES_KEY] = _new_templates_dir()


def pytest_unconfigure(config: pytest.Config) -> None:
    directory = config.stash.get(TEMPLATES_KEY, None)
    if directory is not None:
        os.environ.pop(TEMPLATES_ENV, None)
        drop_templates(directory)


def _new_templates_dir() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="mcp-test-templates-"))
    os.environ[TEMPLATES_ENV] = str(directory)
    return directory


@contextlib.contextmanager
def made_once(name: str) -> Iterator[Path]:
    """Hold the run-wide lock of the prepared database ``name``; its path in the run's directory (which exists once it
    is prepared). Outside a run started with this plugin, the directory is this process's own, gone when it exits."""
    configured = os.environ.get(TEMPLATES_ENV)
    if configured:
        directory = Path(configured)
    else:
        directory = _new_templates_dir()
        atexit.register(drop_templates, directory)
    with open(directory / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield directory / name


def record_database(path: Path, admin_url: str, name: str) -> None:
    """Write at ``path`` (a ``*.database`` name from ``made_once``) that the run made the PostgreSQL database ``name``
    on the server of ``admin_url``: it is dropped when the run ends."""
    path.write_text(f"{admin_url}\n{name}\n")


def recorded_database(path: Path) -> tuple[str, str]:
    """The admin URL and name ``record_database`` wrote at ``path``."""
    admin_url, name = path.read_text().split("\n")[:2]
    return admin_url, name


def drop_templates(directory: Path) -> None:
    """Drop the PostgreSQL databases recorded in ``directory`` (``record_database``) and remove it."""
    for named in directory.glob("*.database"):
        admin_url, name = recorded_database(named)
        with contextlib.suppress(Exception):
            import psycopg

            with psycopg.connect(admin_url, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    shutil.rmtree(directory, ignore_errors=True)
