"""Fixtures of the tool-run tests: a tenant and a caller in it (overridden where a test needs a transaction)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.jobs.selectors import Caller
from tests.factories import TenantFactory


@pytest.fixture
def tenant(db: None) -> Any:
    return TenantFactory(slug="acme")


@pytest.fixture
def alice(tenant: Any) -> Caller:
    return Caller(tenant_id=tenant.pk, principal="user:1", session_id="", protocol_version="2026-07-28")
