"""The token buckets, on both stores: in process memory (a clock the test moves) and in a real Redis (DB 9 of the
machine's server, under a key prefix of the test's own; a private server where the test restarts or kills it)."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from prometheus_client import REGISTRY
from redis.asyncio import Redis

from mcp_platform.quotas.buckets import Bucket, BucketStore, MemoryBuckets, RedisBuckets
from tests.e2e.live import RedisServer

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("MCP_TEST_LIMITS_REDIS_URL", "redis://127.0.0.1:6379/9")
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"
WAIT_LIMIT = 5.0


def failures() -> float:
    return REGISTRY.get_sample_value("mcp_rate_limit_backend_failures_total") or 0.0


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def redis_store() -> AsyncIterator[RedisBuckets]:
    prefix = f"test-limits-{secrets.token_hex(6)}"
    store = RedisBuckets(url=REDIS_URL, prefix=prefix)
    yield store
    await store.close()
    client = Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, redis_store: RedisBuckets) -> BucketStore:
    return MemoryBuckets() if request.param == "memory" else redis_store


def bucket(name: str, *, rate: float, burst: int, limit: str = "client") -> Bucket:
    return Bucket(key=f"{{1}}:{limit}:{name}", limit=limit, rate=rate, burst=burst)


async def admitted(store: BucketStore, *buckets: Bucket, times: int) -> int:
    count = 0
    for _ in range(times):
        if await store.take(buckets) is None:
            count += 1
    return count


async def eventually_admitted(take: Callable[[], Awaitable[object]]) -> None:
    with anyio.fail_after(WAIT_LIMIT):
        # A bucket refills with time and has nothing to wait on: poll, bounded.
        while await take() is not None:  # noqa: ASYNC110
            await anyio.sleep(0.01)


async def test_a_bucket_admits_its_burst_then_refuses_with_the_time_to_the_next_token(store: BucketStore) -> None:
    hourly = bucket("a", rate=1 / 3600, burst=3)
    assert await admitted(store, hourly, times=3) == 3
    refusal = await store.take([hourly])
    assert refusal is not None
    assert refusal.limit == "client"
    assert 3590 < refusal.retry_after <= 3600


async def test_a_refused_request_takes_nothing_from_the_other_buckets(store: BucketStore) -> None:
    empty = bucket("empty", rate=1 / 3600, burst=1, limit="tool")
    roomy = bucket("roomy", rate=1 / 3600, burst=2, limit="tenant")
    assert await store.take([empty]) is None
    for _ in range(5):
        refusal = await store.take([roomy, empty])
        assert refusal is not None and refusal.limit == "tool"
    assert await admitted(store, roomy, times=3) == 2


async def test_the_refusal_names_the_limit_that_admits_last(store: BucketStore) -> None:
    daily = bucket("daily", rate=1 / 86400, burst=1, limit="tenant")
    hourly = bucket("hourly", rate=1 / 3600, burst=1, limit="client")
    assert await store.take([daily, hourly]) is None
    refusal = await store.take([hourly, daily])
    assert refusal is not None and refusal.limit == "tenant" and refusal.retry_after > 86000


async def test_buckets_of_other_subjects_are_apart(store: BucketStore) -> None:
    assert await admitted(store, bucket("one", rate=1 / 3600, burst=2), times=3) == 2
    assert await admitted(store, bucket("two", rate=1 / 3600, burst=2), times=3) == 2


async def test_a_memory_bucket_refills_at_its_rate_up_to_its_burst() -> None:
    clock = ManualClock()
    store = MemoryBuckets(clock=clock)
    per_second = bucket("s", rate=2, burst=4)
    assert await admitted(store, per_second, times=5) == 4
    clock.now += 1.0
    assert await admitted(store, per_second, times=3) == 2
    clock.now += 3600
    assert await admitted(store, per_second, times=5) == 4


async def test_a_memory_store_forgets_the_least_recently_used_bucket_past_its_size() -> None:
    store = MemoryBuckets(clock=ManualClock(), max_buckets=2)
    for name in ("a", "b", "c"):
        assert await store.take([bucket(name, rate=1 / 3600, burst=1)]) is None
    # "a" was dropped, so it is full again; "c" is remembered, so it is empty.
    assert await store.take([bucket("a", rate=1 / 3600, burst=1)]) is None
    assert await store.take([bucket("c", rate=1 / 3600, burst=1)]) is not None


async def test_a_redis_bucket_refills_on_the_servers_clock(redis_store: RedisBuckets) -> None:
    fast = bucket("fast", rate=50, burst=1)
    assert await redis_store.take([fast]) is None
    refusal = await redis_store.take([fast])
    assert refusal is not None and 0 < refusal.retry_after <= 0.02
    await eventually_admitted(lambda: redis_store.take([fast]))


async def test_a_redis_bucket_expires_once_it_would_be_full_again(redis_store: RedisBuckets) -> None:
    minute = bucket("ttl", rate=10 / 60, burst=10)
    assert await redis_store.take([minute]) is None
    client = Redis.from_url(REDIS_URL)
    try:
        ttl_ms = await client.pttl(redis_store.full_key(minute.key))
    finally:
        await client.aclose()
    # Full after burst / rate = 60 s; kept a second longer.
    assert 59_000 < ttl_ms <= 61_000


async def test_a_redis_server_that_lost_the_script_gets_it_again(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        store = RedisBuckets(url=server.url(), prefix="t")
        hourly = bucket("h", rate=1 / 3600, burst=1)
        assert await store.take([hourly]) is None
        # A restart without persistence loses the script cache (and the buckets): EVALSHA fails, EVAL follows.
        await store.close()
        server.restart()
        assert await store.take([hourly]) is None
        refusal = await store.take([hourly])
        assert refusal is not None and refusal.limit == "client"
        await store.close()
    finally:
        server.stop()


async def test_an_unreachable_redis_lets_requests_through_and_counts_them() -> None:
    clock = ManualClock()
    store = RedisBuckets(url=UNREACHABLE_REDIS, prefix="t", clock=clock)
    tight = bucket("tight", rate=1 / 3600, burst=1)
    before = failures()
    started = time.monotonic()
    assert await admitted(store, tight, times=5) == 5
    # The first failure is tried; the next ones within the pause are not (no connect attempt per request).
    assert time.monotonic() - started < 2.0
    assert failures() - before == 5
    await store.close()
