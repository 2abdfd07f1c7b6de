"""Client ID Metadata Documents: django-oauth-toolkit's resolver with the platform's fetch policy.

DOT fetches the document behind an ``https`` client_id on first sight, checks that it names itself
(``client_id`` equals the URL), is public and carries no secret, stores it as an application and re-fetches it
when its Cache-Control lifetime (bounded by ``CIMD_METADATA_MIN/MAX_AGE_SECONDS``) runs out. This module adds:

- the fetch, under the outbound door's address policy (``mcp_infra.outbound``): only to globally routable
  addresses unless ``OUTBOUND_ALLOWED_NETWORKS`` or ``CIMD_ALLOWED_NETWORKS`` names the network (loopback for
  tests and local development), always to the address that was checked (no second DNS lookup to rebind), https
  only, no redirects, one deadline for the whole fetch (however slowly the server sends), bounded size, optional
  extra CA (``CIMD_CA_BUNDLE``). It stays a blocking fetch (DOT calls it from a synchronous view), so it uses the
  door's policy functions rather than its async client;
- the document must also pass what dynamic registration accepts (grant types, redirect URIs, name);
- first sights count against the same per-address hourly limit as registrations.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from typing import Any

import urllib3
import urllib3.connection
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher, _validate_client_id_url
from oauth2_provider.settings import oauth2_settings

from mcp_infra.conf import platform_settings
from mcp_infra.outbound import OutboundRefused, resolve_checked_sync
from mcp_platform.oauth.registration import metadata_problem
from mcp_platform.oauth.throttling import registration_refused


def resolve_fetchable(hostname: str, port: int) -> list[str]:
    """Every address ``hostname`` resolves to, each public or allowed by the outbound policy (the door's
    ``OUTBOUND_ALLOWED_NETWORKS`` plus ``CIMD_ALLOWED_NETWORKS``); else ``CIMDError``.

    One refused address refuses the host: a mixed answer must not let a connection through to the private one.
    """
    try:
        return resolve_checked_sync(hostname, port, extra_networks=platform_settings.CIMD_ALLOWED_NETWORKS)
    except OutboundRefused as exc:
        raise CIMDError(f"client_id host resolves to a non-public address ({exc})") from None
    except OSError as exc:
        raise CIMDError(f"could not resolve client_id host: {exc}") from exc


def _tls_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    if platform_settings.CIMD_CA_BUNDLE:
        context.load_verify_locations(cafile=platform_settings.CIMD_CA_BUNDLE)
    return context


class _RememberedSocketConnection(urllib3.connection.HTTPSConnection):
    """Keeps its socket at hand: http.client lets go of it once a response that ends with the connection began."""

    opened_sock: Any = None

    def connect(self) -> None:
        super().connect()
        self.opened_sock = self.sock


class _DeadlinePool(urllib3.HTTPSConnectionPool):
    """A connection pool whose connections can all be shut from another thread (the fetch's deadline)."""

    ConnectionCls = _RememberedSocketConnection

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._opened: list[Any] = []
        self.was_shut = False

    def _new_conn(self) -> Any:
        connection = super()._new_conn()
        self._opened.append(connection)
        return connection

    def shut(self) -> None:
        self.was_shut = True
        for connection in self._opened:
            sock = getattr(connection, "opened_sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class PlatformMetadataFetcher(SafeMetadataFetcher):
    """``CIMD_METADATA_FETCHER``: DOT's document checks (status, JSON type, size, Cache-Control) on our fetch."""

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        parsed = _validate_client_id_url(client_id)  # https, host, path; no userinfo, fragment or dot segments
        port = parsed.port or 443
        addresses = resolve_fetchable(parsed.hostname, port)
        path = parsed.path + (f"?{parsed.query}" if parsed.query else "")
        headers = {"Host": parsed.netloc, "Accept": "application/json"}
        context = _tls_context()
        # One deadline for all addresses: a host with many addresses must not hold the worker many times over.
        timeout = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        deadline = time.monotonic() + timeout
        failure: Exception | None = None
        for address in addresses:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            # Connect to the checked address; TLS (SNI, certificate) and Host still name the URL's host.
            pool = _DeadlinePool(
                host=address,
                port=port,
                timeout=urllib3.Timeout(connect=remaining, read=remaining, total=remaining),
                retries=False,
                maxsize=1,
                ssl_context=context,
                server_hostname=parsed.hostname,
            )
            # urllib3's timeouts bound each read: a server dripping a byte now and then would outlast them all. At
            # the deadline the connection is shut, which ends whatever read is waiting.
            watchdog = threading.Timer(remaining, pool.shut)
            watchdog.daemon = True
            watchdog.start()
            try:
                response = pool.urlopen("GET", path, headers=headers, redirect=False, preload_content=False)
                try:
                    document, max_age = self._read_document(response)
                finally:
                    response.release_conn()
            except (urllib3.exceptions.HTTPError, CIMDError) as exc:
                if pool.was_shut:
                    raise CIMDError(f"could not fetch client_id document within {timeout:g} s") from None
                if isinstance(exc, CIMDError):
                    raise
                failure = exc
                continue
            finally:
                watchdog.cancel()
                pool.close()
            problem = metadata_problem(document)
            if problem:
                raise CIMDError(f"client metadata refused: {problem}")
            return document, max_age
        raise CIMDError(f"could not fetch client_id document: {failure}")


class RateLimitedCIMDPermission:
    """``CIMD_REGISTRATION_PERMISSION_CLASSES``: a first sight (or re-fetch) counts like a registration."""

    def has_permission(self, request: Any, client_id: str) -> bool:
        return registration_refused(getattr(request, "headers", None) or {}, "cimd") is None
