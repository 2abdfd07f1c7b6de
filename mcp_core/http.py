"""Streamable HTTP header rules as pure functions over header strings.

Accept and Content-Type negotiation, session ids, Host/Origin checks (DNS-rebinding defence), the
2026-07-28 base64 header-value form, and ``Last-Event-ID``.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Iterable
from functools import lru_cache

JSON = "application/json"
EVENT_STREAM = "text/event-stream"

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_MEDIA_RANGE = re.compile(rf"({_TOKEN})/({_TOKEN})")
_QVALUE = re.compile(r"[0-9]*\.?[0-9]*")
_HOSTNAME = re.compile(r"[a-z0-9_.-]+")
_PORT = re.compile(r"[0-9]{1,5}")
_ORIGIN = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#@\s]+)")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SESSION_ID = re.compile(r"[\x21-\x7e]{1,128}")

_B64_PREFIX = "=?base64?"
_B64_SUFFIX = "?="
_MAX_EVENT_ID = 256


def _parse_accept(accept: str) -> dict[str, float]:
    """Media range → q-value; malformed members are skipped, a malformed q-value counts as 1."""
    ranges: dict[str, float] = {}
    for member in accept.split(","):
        media_range, *parameters = member.split(";")
        media_range = media_range.strip().lower()
        # Java's URLConnection sends a bare "*"; it means "*/*" to every server in practice.
        if media_range == "*":
            media_range = "*/*"
        if not _MEDIA_RANGE.fullmatch(media_range):
            continue
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            value = value.strip()
            if name.strip().lower() == "q" and value and _QVALUE.fullmatch(value) and value != ".":
                quality = float(value)
        # A repeated range keeps its most generous q-value.
        ranges[media_range] = max(quality, ranges.get(media_range, 0.0))
    return ranges


def accepted_media_types(accept: str | None) -> frozenset[str]:
    """The media ranges an Accept header lists with a non-zero q-value, lower-cased, parameters dropped."""
    if accept is None:
        return frozenset()
    return frozenset(media for media, quality in _parse_accept(accept).items() if quality > 0)


def accepts(accept: str | None, media_type: str) -> bool:
    """Whether ``media_type`` is acceptable; a missing or blank Accept header accepts anything.

    The most specific matching range decides (RFC 9110 §12.5.1), so ``text/*;q=0, */*`` refuses
    ``text/event-stream``.
    """
    if accept is None or not accept.strip():
        return True
    ranges = _parse_accept(accept)
    media_type = media_type.lower()
    major = media_type.partition("/")[0]
    for candidate in (media_type, f"{major}/*", "*/*"):
        if candidate in ranges:
            return ranges[candidate] > 0
    return False


@lru_cache(maxsize=256)
def accepts_json_and_sse(accept: str | None) -> bool:
    """The POST rule: the client's Accept lists both JSON and SSE (wildcards count, absence does not).

    Remembered per header value: clients send the same few values on every request.
    """
    if accept is None or not accept.strip():
        return False
    return accepts(accept, JSON) and accepts(accept, EVENT_STREAM)


def is_json_content_type(value: str | None) -> bool:
    """Whether a Content-Type is ``application/json`` (any case, parameters such as charset allowed)."""
    if value is None:
        return False
    return value.partition(";")[0].strip().lower() == JSON


def valid_session_id(value: str) -> bool:
    """An ``Mcp-Session-Id``: 1-128 visible ASCII characters (0x21-0x7E)."""
    return _SESSION_ID.fullmatch(value) is not None


def split_host(host_header: str) -> tuple[str, int | None]:
    """Split a Host header (or an origin's authority) into a lower-cased host and an optional port.

    IPv6 literals keep their brackets (``[::1]``) so they compare with allowed-host entries as written;
    one trailing dot of a fully qualified name is dropped. Raises ValueError for an empty host, a
    malformed IPv6 literal, characters no host name may hold, or a port that is empty, not decimal or
    above 65535.
    """
    value = host_header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            raise ValueError(f"unterminated IPv6 literal in host {host_header!r}")
        host, rest = value[: end + 1], value[end + 1 :]
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ValueError(f"malformed IPv6 literal in host {host_header!r}") from None
        if rest and not rest.startswith(":"):
            raise ValueError(f"unexpected text after IPv6 literal in host {host_header!r}")
        port_text = rest[1:] if rest else None
    else:
        host, colon, port_text_or_empty = value.partition(":")
        port_text = port_text_or_empty if colon else None
        if host.endswith("."):
            host = host[:-1]
        if not _HOSTNAME.fullmatch(host):
            raise ValueError(f"not a valid host: {host_header!r}")
    if port_text is None:
        return host, None
    if not _PORT.fullmatch(port_text) or int(port_text) > 65535:
        raise ValueError(f"not a valid port in host {host_header!r}")
    return host, int(port_text)


def _normalise_pattern(pattern: str) -> str:
    pattern = pattern.strip().lower()
    # An IPv6 entry written without brackets still means the bracketed Host form.
    if ":" in pattern and not pattern.startswith("["):
        pattern = f"[{pattern}]"
    if pattern.endswith(".") and pattern != ".":
        pattern = pattern[:-1]
    return pattern


def _host_matches(host: str, patterns: Iterable[str], *, wildcard: bool) -> bool:
    for raw in patterns:
        pattern = _normalise_pattern(raw)
        if pattern == "*":
            if wildcard:
                return True
            continue
        if pattern.startswith("."):
            if host == pattern[1:] or host.endswith(pattern):
                return True
        elif host == pattern:
            return True
    return False


def host_allowed(host_header: str | None, allowed_hosts: Iterable[str]) -> bool:
    """Whether the Host header names one of ``allowed_hosts`` (port ignored, case-insensitive).

    Entries are host names or IP literals (``localhost``, ``127.0.0.1``, ``[::1]``), ``.example.com``
    for the domain and its subdomains, or ``*`` for any host. A missing or malformed Host is refused.
    """
    if host_header is None:
        return False
    try:
        host, _ = split_host(host_header)
    except ValueError:
        return False
    return _host_matches(host, allowed_hosts, wildcard=True)


def _parse_origin(origin: str) -> tuple[str, str, int | None] | None:
    """``(scheme, host, port)`` with the scheme's default port folded to None, or None if unparsable."""
    match = _ORIGIN.fullmatch(origin.strip())
    if match is None:
        return None
    scheme = match.group(1).lower()
    try:
        host, port = split_host(match.group(2))
    except ValueError:
        return None
    if port is not None and _DEFAULT_PORTS.get(scheme) == port:
        port = None
    return scheme, host, port


def origin_allowed(origin: str | None, *, allowed_hosts: Iterable[str], allowed_origins: Iterable[str]) -> bool:
    """Whether a request's Origin header is acceptable.

    No Origin is fine (non-browser clients send none); ``null`` or an unparsable value is not. An
    origin whose host matches ``allowed_hosts`` (any scheme and port) or that equals an entry of
    ``allowed_origins`` (scheme, host and port, default ports normalised) is accepted, as is anything
    when ``allowed_origins`` holds ``*``. A ``*`` in ``allowed_hosts`` does not admit every origin:
    deployments often allow any Host behind a proxy, and that must not switch off the browser check.
    """
    if origin is None:
        return True
    parsed = _parse_origin(origin)
    if parsed is None:
        return False
    if _host_matches(parsed[1], allowed_hosts, wildcard=False):
        return True
    for entry in allowed_origins:
        if entry.strip() == "*":
            return True
        if _parse_origin(entry.strip().rstrip("/")) == parsed:
            return True
    return False


def decode_header_value(value: str) -> str:
    """Undo the 2026-07-28 header encoding: ``=?base64?<b64>?=`` becomes its UTF-8 text.

    Any other value is returned unchanged. Raises ValueError when the base64 or the UTF-8 inside the
    encoded form is invalid.
    """
    if not (value.startswith(_B64_PREFIX) and value.endswith(_B64_SUFFIX)):
        return value
    if len(value) < len(_B64_PREFIX) + len(_B64_SUFFIX):
        # "=?base64?=" overlaps prefix and suffix; it is no encoded value, and no plain one either.
        raise ValueError("truncated base64 header value")
    payload = value[len(_B64_PREFIX) : -len(_B64_SUFFIX)]
    try:
        return base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("invalid base64 header value") from None


def _plain_header_safe(value: str) -> bool:
    if value != value.strip(" \t"):
        return False
    if value.startswith(_B64_PREFIX) and value.endswith(_B64_SUFFIX):
        # Sent plain, it would be read back as an encoded value.
        return False
    return all(" " <= char <= "~" for char in value)


def encode_header_value(value: str) -> str:
    """The header form of ``value``: as is when it is visible ASCII with inner spaces, else base64.

    Raises UnicodeEncodeError (a ValueError) for text holding lone surrogates, which UTF-8 cannot carry.
    """
    if _plain_header_safe(value):
        return value
    return _B64_PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + _B64_SUFFIX


def parse_last_event_id(value: str | None) -> str | None:
    """A usable ``Last-Event-ID``: trimmed, 1-256 visible ASCII characters; anything else is None."""
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > _MAX_EVENT_ID:
        return None
    if not all("\x21" <= char <= "\x7e" for char in value):
        return None
    return value
