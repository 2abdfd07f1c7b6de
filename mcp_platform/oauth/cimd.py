"""Client ID Metadata Documents: django-oauth-toolkit's resolver with the platform's fetch policy.

DOT fetches the document behind an ``https`` client_id on first sight, checks that it names itself
(``client_id`` equals the URL), is public and carries no secret, stores it as an application and re-fetches it
when its Cache-Control lifetime (bounded by ``CIMD_METADATA_MIN/MAX_AGE_SECONDS``) runs out. This module adds:

- the fetch, under the outbound door's address policy (``mcp_platform.outbound``): only to globally routable
  addresses unless ``OUTBOUND_ALLOWED_NETWORKS`` or ``CIMD_ALLOWED_NETWORKS`` names the network (loopback for
  tests and local development), always to the address that was checked (no second DNS lookup to rebind), https
  only, no redirects, bounded time and size, optional extra CA (``CIMD_CA_BUNDLE``). It stays a blocking fetch
  (DOT calls it from a synchronous view), so it uses the door's policy functions rather than its async client;
- the document must also pass what dynamic registration accepts (grant types, redirect URIs, name);
- first sights count against the same per-address hourly limit as registrations.
"""

from __future__ import annotations

import ssl
import time
from typing import Any

import urllib3
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher, _validate_client_id_url
from oauth2_provider.settings import oauth2_settings

from mcp_platform.conf import platform_settings
from mcp_platform.oauth.registration import metadata_problem
from mcp_platform.oauth.throttling import registration_refused
from mcp_platform.outbound import OutboundRefused, resolve_checked_sync


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
        deadline = time.monotonic() + oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        failure: Exception | None = None
        for address in addresses:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            # Connect to the checked address; TLS (SNI, certificate) and Host still name the URL's host.
            pool = urllib3.HTTPSConnectionPool(
                host=address,
                port=port,
                timeout=urllib3.Timeout(connect=remaining, read=remaining, total=remaining),
                retries=False,
                maxsize=1,
                ssl_context=context,
                server_hostname=parsed.hostname,
            )
            try:
                response = pool.urlopen("GET", path, headers=headers, redirect=False, preload_content=False)
                try:
                    document, max_age = self._read_document(response)
                finally:
                    response.release_conn()
            except urllib3.exceptions.HTTPError as exc:
                failure = exc
                continue
            finally:
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
