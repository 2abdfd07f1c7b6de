"""Fixtures shared by every test package."""

import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from mcp_infra.conf import platform_settings
from mcp_platform.activity.hook import activity_writer
from mcp_platform.gateway.session_cache import session_cache
from mcp_platform.quotas.buckets import MemoryBuckets
from mcp_platform.quotas.check import limit_configs, use_bucket_store
from tenants.cache import tenant_cache
from tests.process_marks import RUN_MARK, kill_all, new_mark, wait_until_none_marked
from tests.workers import WORKER_ENV, distributing

# How long processes the run stopped may take to finish exiting before the run counts them as left behind.
LEFTOVER_GRACE_SECONDS = 15.0


def pytest_configure(config: pytest.Config) -> None:
    """Mark every process this run starts (they inherit the environment), to find any it leaves behind."""
    if os.environ.get(WORKER_ENV) and not config.pluginmanager.hasplugin("tests.workers"):
        raise pytest.UsageError("with -n, load -p tests.workers too: workers would share one var dir and Redis")
    os.environ[RUN_MARK] = new_mark()


# A test that asks for one of these (itself or through its fixtures) touches the database or a live platform.
STATEFUL_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "live_platform",
        "fault_topology",
    }
)
STATEFUL_MARKS = ("django_db", "e2e", "production")
# A page driven in the browser is the same page on both paths: what it writes and reads there is tested on both by
# the tests without a browser. Browser tests run on the embedded pass only, unless they are marked
# ``across_processes`` (what the page drives goes from web process to worker and back there) or ``production``.
BROWSER_FIXTURE = "chromium"
BOTH_PATHS_MARKS = ("production", "across_processes")
# Set by scripts/test on its second pass (PostgreSQL + Redis): what needs neither ran in the first pass.
STATEFUL_ONLY_ENV = "MCP_TEST_STATEFUL_ONLY"


def is_stateful(item: pytest.Item) -> bool:
    """Whether ``item`` depends on the database, Redis or a live server, and so must run on both paths (a browser
    test only when marked so: see ``BROWSER_FIXTURE``).

    A test that needs none of them cannot slip into the once-only set unnoticed: pytest-django refuses database
    access to a test without the ``django_db`` mark, and a test that needs PostgreSQL or Redis by itself says so
    with the ``production`` mark.
    """
    fixtures = getattr(item, "fixturenames", ())
    if any(item.get_closest_marker(name) is not None for name in BOTH_PATHS_MARKS):
        return True
    if BROWSER_FIXTURE in fixtures:
        return False
    if any(item.get_closest_marker(name) is not None for name in STATEFUL_MARKS):
        return True
    return not STATEFUL_FIXTURES.isdisjoint(fixtures)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the production pass, run only the tests that depend on the database, Redis or a live server."""
    if os.environ.get(STATEFUL_ONLY_ENV) != "1":
        return
    kept = [item for item in items if is_stateful(item)]
    once = [item for item in items if not is_stateful(item)]
    if once:
        config.hook.pytest_deselected(items=once)
        items[:] = kept


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A run that leaves a process running fails, names it, and kills it. Split over workers, each worker checks
    what it started; the process that hands out the tests started nothing but the workers."""
    if distributing(session.config):
        return
    left = wait_until_none_marked(RUN_MARK, os.environ[RUN_MARK], timeout=LEFTOVER_GRACE_SECONDS)
    if left:
        kill_all(left)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        listing = "\n".join(f"  {pid}: {command}" for pid, command in sorted(left.items()))
        if reporter is not None:
            reporter.write_line(f"Processes started by the tests were left running (now killed):\n{listing}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """pytest-django's test database, whose drop at the end must not fail on connections that threads of async
    tests (the ORM's executor) still hold: on PostgreSQL they are ended first."""
    yield
    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def memory_buckets() -> Iterator[None]:
    """Rate-limit buckets in this process's memory, and the tenants' limits read afresh (before and after)."""
    use_bucket_store(MemoryBuckets())
    limit_configs.clear()
    yield
    use_bucket_store(None)
    limit_configs.clear()


@pytest.fixture(autouse=True)
def _fresh_tenant_cache() -> Iterator[None]:
    """Each test starts with no remembered tenants or sessions: test databases are flushed without telling the cache.

    In-process tests also keep the cache off the channel layer: they run on short-lived event loops, and a mailbox
    receive left on a closed loop stalls channels-redis for the tests after it. Commits on this process still drop
    the tenant at once; nudges between processes are tested end to end (tests/e2e).
    """
    tenant_cache.clear()
    session_cache.clear()
    saved = tenant_cache.config
    tenant_cache.configure(ttl=saved.ttl, listen=None, unlisten=None)
    yield
    tenant_cache.configure(ttl=saved.ttl, listen=saved.listen, unlisten=saved.unlisten)
    tenant_cache.clear()
    session_cache.clear()


def _sqlite_readers_do_not_wait_for_writers(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """The embedded test database is SQLite in memory with a shared cache, whose table locks make a reader on one
    connection fail at once ("table is locked") while a worker thread writes on another. A file database, as the
    embedded platform uses, waits instead; here readers read through the writer's lock."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA read_uncommitted = 1")


connection_created.connect(_sqlite_readers_do_not_wait_for_writers)


@pytest.fixture(autouse=True, scope="session")
def _activity_written_when_asked() -> None:
    """In-process tests store the activity log when they ask (``activity_writer().flush()``): a writer thread of
    its own would write while a test holds SQLite's shared in-memory database, which answers "table is locked" at
    once instead of waiting. The servers tests start keep their writer threads (set in the environment)."""
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "ACTIVITY_FLUSH_SECONDS": 0}
    platform_settings.reload()
    activity_writer.cache_clear()


@pytest.fixture(autouse=True)
def _no_activity_left_over() -> Iterator[None]:
    """Calls a test makes are logged in its own database; what its writer did not store by the end goes with it."""
    yield
    activity_writer().discard()
