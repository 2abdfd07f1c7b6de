"""How the door's clients connect and cap, once for all of them: ``connect_first`` (a checked address that answers,
within one deadline), the network backend with the policy in ``connect_tcp`` (one class for ``httpcore`` and
``httpcore2``, which share the interface), the rebuilt connection pool that carries it, and the size cap on a
response body.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from types import ModuleType
from typing import Any, ClassVar, TypeVar

import httpcore

from mcp_infra.outbound.policy import OutboundRefused, Resolve, checked_addresses, system_resolve

USER_AGENT = "mcp-platform (outbound)"
# One pool shape for every client of the door (the httpx defaults, with a keep-alive under uvicorn's 5 s).
MAX_CONNECTIONS = 100
MAX_KEEPALIVE_CONNECTIONS = 20
KEEPALIVE_EXPIRY = 5.0

StreamT = TypeVar("StreamT")


async def connect_first(
    addresses: Sequence[str],
    timeout: float | None,
    connect: Callable[[str, float | None], Awaitable[StreamT]],
    *,
    retry_on: tuple[type[Exception], ...],
    timed_out: Exception,
) -> StreamT:
    """Connect to the first of the checked ``addresses`` that answers within ``timeout`` overall (every client of
    the door connects this way). Raises the last connection error, or ``timed_out``."""
    deadline = None if timeout is None else time.monotonic() + timeout
    failure: Exception | None = None
    for address in addresses:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            break
        try:
            return await connect(address, remaining)
        except retry_on as exc:
            failure = exc
    raise failure if failure is not None else timed_out


class CheckedBackend:
    """A network backend with the policy in ``connect_tcp``: resolve once, check every address, connect to a
    checked one. Pooled connections are per host name, so each new connection (each new redirect host) is checked,
    and nothing can swap the address between the check and the connection.

    Written once for ``httpcore`` and ``httpcore2`` (``core``: the module whose backend, errors and streams are
    used); a refusal is raised as ``refused(message)``, a name that does not resolve as ``core.ConnectError``."""

    core: ClassVar[ModuleType]

    def __init__(self, *, tenant_id: int | None, resolve: Resolve | None = None) -> None:
        self.tenant_id = tenant_id
        self.resolve = resolve or system_resolve
        self._inner = self.core.AnyIOBackend()

    def refused(self, message: str) -> Exception:
        return self.core.ConnectError(message)  # type: ignore[no-any-return]

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> Any:
        try:
            addresses = await checked_addresses(host, port, tenant_id=self.tenant_id, resolve=self.resolve)
        except OutboundRefused as exc:
            raise self.refused(str(exc)) from None
        except OSError as exc:
            raise self.core.ConnectError(str(exc)) from None
        return await connect_first(
            addresses,
            timeout,
            lambda address, remaining: self._inner.connect_tcp(address, port, remaining, local_address, socket_options),
            retry_on=(self.core.ConnectError, self.core.ConnectTimeout),
            timed_out=self.core.ConnectTimeout(f"timed out connecting to {host}"),
        )

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> Any:
        raise self.refused("refused: Unix sockets are not reachable through the outbound door")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class CheckedNetworkBackend(CheckedBackend, httpcore.AsyncNetworkBackend):
    """``httpcore``'s backend (the httpx client's): a refusal is the door's ``OutboundRefused``."""

    core: ClassVar[ModuleType] = httpcore

    def refused(self, message: str) -> Exception:
        return OutboundRefused(message)


def rebuild_pool(inner: Any, pool_class: Callable[..., Any], backend: CheckedBackend) -> None:
    """Give an ``httpx``/``httpx2`` ``AsyncHTTPTransport`` (``inner``) a pool built the way the library builds it,
    with ``backend``: neither takes a network backend. A test that resolves names only through the ``resolve`` seam
    proves this still holds after an upgrade."""
    inner._pool = pool_class(
        ssl_context=inner._pool._ssl_context,
        max_connections=MAX_CONNECTIONS,
        max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS,
        keepalive_expiry=KEEPALIVE_EXPIRY,
        network_backend=backend,
    )


async def capped(chunks: AsyncIterable[bytes], limit: int, too_large: Callable[[], Exception]) -> AsyncIterator[bytes]:
    """``chunks`` as they come, raising ``too_large()`` once more than ``limit`` bytes came."""
    seen = 0
    async for chunk in chunks:
        seen += len(chunk)
        if seen > limit:
            raise too_large()
        yield chunk
