"""The loopback servers the outbound suite talks to, the allow-list that lets it, and each client of the door in
turn (``door_kind``, ``door``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.infra.outbound.doors import DOORS, Door
from tests.loopback_http import LoopbackServer, loopback_server


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with loopback_server("127.0.0.1") as running:
        yield running


@pytest.fixture
def elsewhere() -> Iterator[LoopbackServer]:
    """A server on 127.0.0.2: reachable on this machine, but outside an allow-list of 127.0.0.1/32."""
    with loopback_server("127.0.0.2") as running:
        yield running


@pytest.fixture
def loopback_allowed(settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}


@pytest.fixture(params=DOORS)
def door_kind(request: pytest.FixtureRequest) -> str:
    """Each client of the door in turn."""
    return str(request.param)


@pytest.fixture
async def door(door_kind: str) -> AsyncIterator[Door]:
    """The client of ``door_kind`` with the system resolver."""
    built = Door.build(door_kind)
    yield built
    await built.aclose()
