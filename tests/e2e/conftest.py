"""Fixtures for the end-to-end tests: one live platform per test session, its URLs, its logs on failure.

Embedded by default (one ``manage.py serve``); the production topology (two web processes and a Celery
worker on PostgreSQL and Redis) when ``DATABASE_URL`` and ``REDIS_URL`` are set. See ``tests/e2e/live.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.live import (
    CONFORMANCE_TENANT,
    PAGED_TENANT,
    LiveServer,
    embedded_server,
    production_requested,
    production_server,
)

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    """On failure, show what the server processes printed."""
    outcome: Any = yield
    report = outcome.get_result()
    server = item.config.stash.get(LIVE_SERVER_KEY, None)
    if report.failed and server is not None and "live_platform" in getattr(item, "fixturenames", ()):
        report.sections.append(("live server output", server.logs()))


@pytest.fixture
def conformance_url(live_platform: LiveServer) -> str:
    return live_platform.endpoint(CONFORMANCE_TENANT)


@pytest.fixture
def paged_url(live_platform: LiveServer) -> str:
    return live_platform.endpoint(PAGED_TENANT)
