"""Fixtures shared by every test package."""

from collections.abc import Iterator

import pytest

from tenants.cache import tenant_cache


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _fresh_tenant_cache() -> Iterator[None]:
    """Each test starts with no remembered tenants: test databases are flushed without telling the cache."""
    tenant_cache.clear()
    yield
    tenant_cache.clear()
