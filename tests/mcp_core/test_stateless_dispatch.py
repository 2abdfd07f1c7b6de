"""The stateless era through ``dispatch``: discovery, its method table, result fields, logging and capabilities."""

from __future__ import annotations

from typing import Any

import mcp_types
import pytest

from mcp_core.caching import CacheHints
from mcp_core.catalog import Page
from mcp_core.dispatch import dispatch
from mcp_core.env import Env, ServerIdentity
from mcp_core.errors import HeaderMismatch, InvalidParams, MethodNotFound, MissingClientCapability
from tests.mcp_core.memory_catalog import MemoryCatalog, RecordingOutbound

pytestmark = pytest.mark.anyio

V = "2026-07-28"


async def chatty(ctx: Any) -> str:
    await ctx.log("debug", "detail")
    await ctx.log("error", "trouble")
    return "done"


async def asks(ctx: Any) -> str:
    await ctx.sample([{"role": "user", "content": {"type": "text", "text": "hi"}}], 10)
    return "sampled"


async def shout(ctx: Any, region: str = "") -> str:
    return region.upper()


def catalog() -> MemoryCatalog:
    found = MemoryCatalog()
    for name, fn in (("chatty", chatty), ("asks", asks)):
        found.add_tool({"name": name, "description": name, "inputSchema": {"type": "object"}}, fn)
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    found.add_tool({"name": "shout", "description": "shout", "inputSchema": schema}, shout)
    return found


def env(**kwargs: Any) -> Env:
    kwargs.setdefault("outbound", RecordingOutbound())
    kwargs.setdefault("cache", CacheHints(ttl_ms=30_000, scope="public"))
    server = ServerIdentity("srv", "2.0", title="Server", instructions="Be kind.")
    kwargs.setdefault("catalog", catalog())
    return Env(version=V, server=server, **kwargs)


async def test_discover_advertises_both_eras_and_validates_as_a_discover_result():
    result = await dispatch("server/discover", {}, env())
    parsed = mcp_types.DiscoverResult.model_validate(result)
    assert result["supportedVersions"][0] == V
    assert "2024-11-05" in result["supportedVersions"]
    assert result["instructions"] == "Be kind."
    assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == ("complete", 30_000, "public")
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "srv", "version": "2.0", "title": "Server"}
    # List changes and resource updates are promised: subscriptions/listen delivers them.
    assert parsed.capabilities.tools is not None and parsed.capabilities.tools.list_changed
    assert result["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "nope/x"]
)
async def test_methods_this_era_lacks_are_not_found_with_404(method):
    with pytest.raises(MethodNotFound) as caught:
        await dispatch(method, {}, env())
    assert caught.value.http_status == 404


async def test_list_results_carry_cache_hints_and_calls_do_not():
    listed = await dispatch("tools/list", {}, env())
    assert [t["name"] for t in listed["tools"]] == ["asks", "chatty", "shout"]
    assert (listed["ttlMs"], listed["cacheScope"], listed["resultType"]) == (30_000, "public", "complete")
    called = await dispatch("tools/call", {"name": "chatty"}, env())
    assert called["resultType"] == "complete"
    assert "ttlMs" not in called and "cacheScope" not in called


class ProxyingCatalog(MemoryCatalog):
    """Reads whose contents come from a source with cache hints of its own (as an upstream's do)."""

    def __init__(self, ttl_ms: int, scope: str) -> None:
        super().__init__()
        self.limit = (ttl_ms, scope)

    async def read_resource(self, uri: str, ctx: Any) -> list[dict[str, Any]] | None:
        ctx.limit_cache(*self.limit)
        return [{"uri": uri, "text": "from the source"}]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ((0, "public"), (0, "public")),
        ((5_000, "private"), (5_000, "private")),
        ((90_000, "public"), (30_000, "public")),
    ],
)
async def test_a_read_promises_no_longer_life_nor_wider_sharing_than_its_source(source, expected):
    result = await dispatch("resources/read", {"uri": "x://y"}, env(catalog=ProxyingCatalog(*source)))
    assert (result["ttlMs"], result["cacheScope"]) == expected


class ListHintingCatalog(MemoryCatalog):
    """Lists whose items come from a source with list cache hints of its own (as an upstream's do)."""

    def __init__(self, ttl_ms: int, scope: str) -> None:
        super().__init__()
        self.limit = CacheHints(ttl_ms=ttl_ms, scope=scope)

    async def list_prompts(self, *, after: str | None, limit: int) -> Page:
        page = await super().list_prompts(after=after, limit=limit)
        return Page(page.items, page.has_more, page.last_key, self.limit)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ((0, "public"), (0, "public")),
        ((5_000, "private"), (5_000, "private")),
        ((90_000, "public"), (30_000, "public")),
    ],
)
async def test_a_list_promises_no_longer_life_nor_wider_sharing_than_its_sources(source, expected):
    catalog = ListHintingCatalog(*source)
    result = await dispatch("prompts/list", {}, env(catalog=catalog))
    assert (result["ttlMs"], result["cacheScope"]) == expected
    # A list without such sources keeps the server's hints.
    assert (await dispatch("tools/list", {}, env(catalog=catalog)))["ttlMs"] == 30_000


async def test_no_log_messages_without_a_log_level():
    outbound = RecordingOutbound()
    await dispatch("tools/call", {"name": "chatty"}, env(outbound=outbound))
    assert outbound.notifications == []


async def test_the_log_level_is_the_minimum_sent():
    outbound = RecordingOutbound()
    await dispatch("tools/call", {"name": "chatty"}, env(outbound=outbound, log_level="warning"))
    assert outbound.notifications == [("notifications/message", {"level": "error", "data": "trouble"})]


async def test_an_undeclared_capability_is_missing_client_capability():
    with pytest.raises(MissingClientCapability) as caught:
        await dispatch("tools/call", {"name": "asks"}, env())
    assert caught.value.http_status == 400
    assert caught.value.data == {"requiredCapabilities": {"sampling": {}}}


async def test_unknown_resource_is_invalid_params():
    with pytest.raises(InvalidParams):
        await dispatch("resources/read", {"uri": "nothing://here"}, env())


async def test_param_headers_are_checked_against_the_arguments():
    call = {"name": "shout", "arguments": {"region": "eu"}}
    assert (await dispatch("tools/call", call, env(headers={"mcp-param-region": "eu"})))["content"][0]["text"] == "EU"
    with pytest.raises(HeaderMismatch):
        await dispatch("tools/call", call, env(headers={}))
