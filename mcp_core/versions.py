"""Protocol revisions this server speaks, their eras, and what each one allows."""

from __future__ import annotations

from typing import Final

V2024_11_05: Final = "2024-11-05"
V2025_03_26: Final = "2025-03-26"
V2025_06_18: Final = "2025-06-18"
V2025_11_25: Final = "2025-11-25"
V2026_07_28: Final = "2026-07-28"

HANDSHAKE_VERSIONS: Final[tuple[str, ...]] = (V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25)
STATELESS_VERSIONS: Final[tuple[str, ...]] = (V2026_07_28,)
LATEST_HANDSHAKE: Final = V2025_11_25
# The version assumed when a handshake-era request has no MCP-Protocol-Version header.
DEFAULT_HEADERLESS_VERSION: Final = V2025_03_26


def negotiate(requested: str) -> str:
    """The version to answer an ``initialize`` with: the requested one if served, else the newest."""
    return requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE


def at_least(version: str, minimum: str) -> bool:
    """True when ``version`` is a known handshake revision no older than ``minimum``."""
    order = (*HANDSHAKE_VERSIONS, *STATELESS_VERSIONS)
    if version not in order:
        return False
    return order.index(version) >= order.index(minimum)


def allows_batches(version: str) -> bool:
    """JSON-RPC batches were allowed by 2025-03-26 only."""
    return version == V2025_03_26


def header_version_acceptable(header: str, negotiated: str) -> bool:
    """Whether an ``MCP-Protocol-Version`` header may accompany a request of a session at ``negotiated``.

    Any served handshake revision is accepted: clients (the official conformance suite among them) send
    2025-03-26 on sessions negotiated later, and the header only has to name a version we speak.
    """
    return header in HANDSHAKE_VERSIONS
