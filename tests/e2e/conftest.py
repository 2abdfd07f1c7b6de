"""Fixtures for the end-to-end tests: one live platform per test session, its URLs, its logs on failure.

Embedded by default (one ``manage.py serve``); the production topology (two web processes and a Celery
worker on PostgreSQL and Redis) when ``DATABASE_URL`` and ``REDIS_URL`` are set. See ``tests/e2e/live.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser import CHROMIUM, SKIP_ENV, launch_chromium
from tests.e2e.faults import Topology, start_topology
from tests.e2e.hosts import HOSTS_KEY
from tests.e2e.live import (
    CONFORMANCE_TENANT,
    OWN_PLATFORM_LOGS_KEY,
    PAGED_TENANT,
    LiveServer,
    embedded_server,
    production_requested,
    production_server,
)
from tests.e2e.personal_upstreams import PersonalUpstream, personal_upstreams

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/e2e drives live processes: mark it ``e2e``."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


LIVE_SERVER_KEY = pytest.StashKey[LiveServer]()


# Not ``live_server``: pytest-django owns that name and would wrap every such test in its test database.
@pytest.fixture(scope="session")
def live_platform(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The running platform, with the conformance tenant and the 120-tool ``paged`` tenant loaded."""
    tmp = tmp_path_factory.mktemp("live-server")
    with ExitStack() as stack:
        server = production_server(stack, tmp) if production_requested() else embedded_server(stack, tmp)
        request.config.stash[LIVE_SERVER_KEY] = server
        try:
            yield server
        finally:
            del request.config.stash[LIVE_SERVER_KEY]


PERSONAL_UPSTREAM_KEY = pytest.StashKey[PersonalUpstream]()


@pytest.fixture(scope="session")
def personal_upstream(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PersonalUpstream]:
    """A second platform instance whose tenant requires OAuth, and the Notes API that trusts it: a person's upstreams
    (``tests/e2e/personal_upstreams.py``)."""
    with personal_upstreams(tmp_path_factory.mktemp("personal-upstream")) as upstream:
        request.config.stash[PERSONAL_UPSTREAM_KEY] = upstream
        try:
            yield upstream
        finally:
            del request.config.stash[PERSONAL_UPSTREAM_KEY]


FAULT_TOPOLOGY_KEY = pytest.StashKey[Topology]()


@pytest.fixture
def fault_topology(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Topology]:
    """A production topology of the test's own (database, Redis, two web processes, a worker with beat) that
    the test may break: see ``tests/e2e/faults.py``."""
    with ExitStack() as stack:
        topology = start_topology(stack, tmp_path)
        request.node.stash[FAULT_TOPOLOGY_KEY] = topology
        yield topology


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    """On failure, show what the server processes printed."""
    outcome: Any = yield
    report = outcome.get_result()
    server = item.config.stash.get(LIVE_SERVER_KEY, None)
    if report.failed and server is not None and "live_platform" in getattr(item, "fixturenames", ()):
        report.sections.append(("live server output", server.logs()))
    topology = item.stash.get(FAULT_TOPOLOGY_KEY, None)
    if report.failed and topology is not None:
        report.sections.append(("fault topology output", topology.logs()))
    own_logs = item.stash.get(OWN_PLATFORM_LOGS_KEY, None)
    if report.failed and own_logs is not None:
        report.sections.append(("the test's own platform output", own_logs()))
    upstream = item.config.stash.get(PERSONAL_UPSTREAM_KEY, None)
    if report.failed and upstream is not None and "personal_upstream" in getattr(item, "fixturenames", ()):
        report.sections.append(("personal upstream output", upstream.logs()))
    hosts = item.config.stash.get(HOSTS_KEY, None)
    if report.failed and hosts is not None and "hosts" in getattr(item, "fixturenames", ()):
        report.sections.append(("multi-host topology output", hosts.logs()))


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright, one per test module (Playwright's sync API owns an event loop
    while it runs, so it must be gone before another module's async tests start).

    A missing browser fails loudly; only ``MCP_SKIP_BROWSER_TESTS=1`` skips.
    """
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1: browser tests skipped on request")
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; scripts/test does) "
            f"or set {SKIP_ENV}=1 to skip the browser tests",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def conformance_url(live_platform: LiveServer) -> str:
    return live_platform.endpoint(CONFORMANCE_TENANT)


@pytest.fixture
def paged_url(live_platform: LiveServer) -> str:
    return live_platform.endpoint(PAGED_TENANT)
