"""Fixtures shared by every test package."""

from collections.abc import Iterator

import pytest

from tenants.cache import tenant_cache


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _fresh_tenant_cache() -> Iterator[None]:
    """Each test starts with no remembered tenants: test databases are flushed without telling the cache.

    In-process tests also keep the cache off the channel layer: they run on short-lived event loops, and a mailbox
    receive left on a closed loop stalls channels-redis for the tests after it. Commits on this process still drop
    the tenant at once; nudges between processes are tested end to end (tests/e2e).
    """
    tenant_cache.clear()
    saved = tenant_cache.config
    tenant_cache.configure(ttl=saved.ttl, listen=None, unlisten=None)
    yield
    tenant_cache.configure(ttl=saved.ttl, listen=saved.listen, unlisten=saved.unlisten)
    tenant_cache.clear()
