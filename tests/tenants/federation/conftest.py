"""Fixtures of the federation tests that reach a real upstream: the outbound door opened to loopback, as a
developer's machine allows it (a deployment refuses loopback unless told), and an SDK upstream process."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from tests.e2e.upstreams import UpstreamServer, upstream_server


@pytest.fixture
def loopback_allowed() -> Iterator[None]:
    with override_settings(MCP_PLATFORM={**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}):
        yield


@pytest.fixture
def sdk_upstream(tmp_path: Path) -> Iterator[UpstreamServer]:
    """An SDK upstream process (``tests/upstreams/sdk_server.py``) for the test, stopped after."""
    with ExitStack() as stack:
        yield upstream_server(stack, tmp_path / "upstream")
