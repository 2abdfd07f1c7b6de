"""The shared shape of every paginated list method: opaque cursor in, one page and ``nextCursor`` out."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp_core.caching import narrowest
from mcp_core.catalog import Page
from mcp_core.env import Env
from mcp_core.pagination import decode_cursor, encode_cursor

JSONObject = dict[str, Any]
PageFetcher = Callable[..., Awaitable[Page]]


async def list_page(params: JSONObject | None, fetch: PageFetcher, *, key: str, env: Env) -> JSONObject:
    """Fetch the page after the cursor in ``params`` and shape it as ``{key: items, nextCursor?}``, with cache
    hints no longer or wider than the page's sources allowed (stateless era).

    Raises InvalidParams for a cursor this server did not issue.
    """
    after = decode_cursor((params or {}).get("cursor"))
    page = await fetch(after=after, limit=env.page_size)
    result: JSONObject = {key: page.items}
    if env.stateless and page.cache is not None:
        hints = narrowest(env.cache, page.cache)
        result = {"ttlMs": hints.ttl_ms, "cacheScope": hints.scope, **result}
    if page.has_more and page.last_key is not None:
        result["nextCursor"] = encode_cursor(page.last_key)
    return result
