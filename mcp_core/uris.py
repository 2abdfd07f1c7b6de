"""URIs as the protocol carries them (resource URIs, upstream and tool URLs), parsed without ever raising."""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit


def split_uri(uri: str) -> SplitResult | None:
    """``urlsplit(uri)``, or None where it raises (``x://[x]``: brackets that hold no IPv6 address; a bad port is
    only found when ``.port`` is read)."""
    try:
        return urlsplit(uri)
    except ValueError:
        return None


def uri_scheme(uri: str) -> str:
    """The scheme of ``uri`` in lower case; empty when it has none or does not parse."""
    parts = split_uri(uri)
    return parts.scheme.lower() if parts else ""
