"""2026-07-28 cache hints: which results carry ``ttlMs`` and ``cacheScope``, and with what values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

JSONObject = dict[str, Any]

CACHE_SCOPES: Final[tuple[str, ...]] = ("public", "private")
CACHEABLE_METHODS: Final[frozenset[str]] = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)


@dataclass(frozen=True)
class CacheHints:
    """How long a client may treat a cacheable result as fresh, and who may share the cached copy."""

    ttl_ms: int = 0
    scope: str = "private"

    def __post_init__(self) -> None:
        if self.ttl_ms < 0:
            raise ValueError("ttl_ms must be >= 0")
        if self.scope not in CACHE_SCOPES:
            raise ValueError(f"scope must be one of {', '.join(CACHE_SCOPES)}")


def with_cache_hints(method: str, result: JSONObject, hints: CacheHints) -> JSONObject:
    """``result`` with ``ttlMs``/``cacheScope`` when ``method`` is cacheable; hints the handler set are kept."""
    if method not in CACHEABLE_METHODS:
        return result
    return {"ttlMs": hints.ttl_ms, "cacheScope": hints.scope, **result}


def narrowest(*hints: CacheHints) -> CacheHints:
    """The shortest life and the most private scope of ``hints``: what a result built from several sources may
    promise (never longer, never wider, than any of them)."""
    private = any(hint.scope == "private" for hint in hints)
    return CacheHints(ttl_ms=min(hint.ttl_ms for hint in hints), scope="private" if private else "public")
