"""What every request of the OAuth client shares: its errors, one request through the outbound door (no redirect
followed, the body capped, the exchange timed), and the checks of what an upstream answers (URLs, lists, scopes,
error answers that must not repeat a secret)."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from mcp_infra.outbound import OutboundRefused, OutboundResponseTooLarge, outbound_client, read_capped

RESPONSE_LIMIT = 64 * 1024
# Each request ends within this, headers and body together (an upstream that drips bytes included).
REQUEST_SECONDS = 10.0
CONNECT_SECONDS = 5.0
MAX_URL_LENGTH = 2048
MAX_DESCRIPTION = 200
# RFC 6749 appendix A: scope tokens, error codes, and the characters tokens are made of.
_SCOPE = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+(?: [\x21\x23-\x5b\x5d-\x7e]+)*$")
_ERROR_CODE = re.compile(r"^[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}$")
VSCHARS = re.compile(r"^[\x20-\x7e]+$")


class OAuthClientError(Exception):
    """An upstream authorization server could not be used: unreachable, refusing, or answering what cannot be used.

    ``error_code`` is the OAuth error code it answered (``invalid_grant``, ``invalid_client``...), if any. Messages
    name URLs without their query and never quote a token or a secret.
    """

    def __init__(self, message: str, error_code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code


class RefreshRefused(OAuthClientError):
    """The server refused the refresh token (``invalid_grant``: expired, revoked, replayed): only the person can
    connect again."""


# ---- checks of what an upstream says ---------------------------------------------------------------------------------


def http_url(value: Any, what: str) -> str:
    """``value`` when it is an absolute http(s) URL of sensible length, without fragment or blanks."""
    problem = f"{what} is not an http(s) URL"
    if not isinstance(value, str) or not value or len(value) > MAX_URL_LENGTH or not value.isascii():
        raise OAuthClientError(problem)
    if any(ord(c) <= 32 or ord(c) == 127 for c in value):
        raise OAuthClientError(problem)
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (a port that is no number raises here)
    except ValueError:
        raise OAuthClientError(problem) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or parts.fragment or "#" in value:
        raise OAuthClientError(problem)
    return value


def issuer_url(value: Any, what: str) -> str:
    issuer = http_url(value, what)
    if urlsplit(issuer).query or "?" in issuer:
        raise OAuthClientError(f"{what} must have no query (RFC 8414 §2)")
    return issuer


def strings(document: dict[str, Any], key: str) -> tuple[str, ...]:
    value = document.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise OAuthClientError(f"{key} must be a list of strings")
    return tuple(value)


def flag(document: dict[str, Any], key: str) -> bool:
    value = document.get(key, False)
    if not isinstance(value, bool):
        raise OAuthClientError(f"{key} must be true or false")
    return value


def scope_value(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > RESPONSE_LIMIT or not _SCOPE.match(value):
        raise OAuthClientError(f"{what} is not a list of scopes separated by spaces")
    return value


def shown_url(url: str) -> str:
    """A URL as messages show it: no user info, no query."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def canonical(url: str) -> str:
    """``url`` with scheme and host in lower case, the default port dropped and no terminating slash: how two
    spellings of one resource identifier compare."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    port = parts.port
    netloc = host if port in (None, {"http": 80, "https": 443}.get(scheme)) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def json_object(body: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser's depth
        raise OAuthClientError(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise OAuthClientError(f"{what} is not a JSON object")
    return value


# ---- requests through the outbound door ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: httpx.Headers
    body: bytes


async def request(
    tenant_id: int,
    method: str,
    url: str,
    *,
    what: str,
    read_body: bool = True,
    **options: Any,
) -> Answer:
    """One request through the door: redirects not followed, the body capped, the whole exchange timed.

    Raises ``OAuthClientError`` saying ``what`` failed where (the URL without its query) and why.
    """
    where = shown_url(url)
    headers = {"Accept": "application/json", **options.pop("headers", {})}
    timeout = httpx.Timeout(REQUEST_SECONDS, connect=CONNECT_SECONDS)
    try:
        async with asyncio.timeout(REQUEST_SECONDS):
            async with outbound_client(tenant_id=tenant_id).stream(
                method, url, headers=headers, timeout=timeout, follow_redirects=False, **options
            ) as response:
                body = await read_capped(response, RESPONSE_LIMIT) if read_body else b""
    except (TimeoutError, httpx.TimeoutException):
        raise OAuthClientError(f"{what}: {where} did not answer within {REQUEST_SECONDS:g} s") from None
    except OutboundResponseTooLarge:
        raise OAuthClientError(f"{what}: {where} answered more than {RESPONSE_LIMIT // 1024} KiB") from None
    except OutboundRefused as exc:
        raise OAuthClientError(f"{what}: {exc}") from None
    except httpx.HTTPError as exc:
        raise OAuthClientError(f"{what}: could not reach {where} ({type(exc).__name__})") from None
    return Answer(response.status_code, response.headers, body)


def oauth_error(body: bytes, sensitive: tuple[str, ...]) -> tuple[str | None, str]:
    """The OAuth error code of an error answer (RFC 6749 §5.2, RFC 7591 §3.2.2) and a description to show after it:
    printable, short, and dropped when it repeats anything sensitive the request carried."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None, ""
    if not isinstance(document, dict):
        return None, ""
    code = document.get("error")
    if not isinstance(code, str) or not _ERROR_CODE.match(code) or any(s in code for s in sensitive):
        return None, ""
    description = document.get("error_description")
    if not isinstance(description, str):
        return code, ""
    shown = "".join(c for c in description if c.isprintable())[:MAX_DESCRIPTION]
    if any(s in description for s in sensitive):
        return code, ""
    return code, f" ({shown})" if shown else ""
