"""Token buckets that hold rate limits: in Redis for the production topology (one atomic Lua script, shared by
every web process) and in process memory for the embedded one (a single web process).

A check names every bucket a request falls under and takes one token from each, or from none: a request refused
by one limit does not use up another. The answer to a refusal is the limit that refused and how long until it
would admit the request.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from redis.asyncio import Redis

from mcp_infra.telemetry import metrics

logger = logging.getLogger(__name__)

# Redis is asked with short time limits and, after a failure, not asked again for a while: a rate limit must not
# turn a Redis outage into a failure (or a stall) of every request. Requests go through unlimited meanwhile.
REDIS_TIMEOUT = 0.25
REDIS_RETRY_AFTER_FAILURE = 1.0
# In-process buckets kept at most; the least recently used goes first (it comes back full, which only errs on
# the side of the client).
MAX_MEMORY_BUCKETS = 100_000


@dataclass(frozen=True, slots=True)
class Bucket:
    """One bucket a request falls under: ``key`` names tenant, scope and subject; ``limit`` is what a refusal
    reports ("tenant", "client", "tool", "ceiling"); refilled at ``rate`` tokens a second up to ``burst``."""

    key: str
    limit: str
    rate: float
    burst: int


@dataclass(frozen=True, slots=True)
class Refusal:
    limit: str
    retry_after: float  # seconds until the refusing bucket holds a token again


class BucketStore(Protocol):
    async def take(self, buckets: Sequence[Bucket]) -> Refusal | None:
        """One token from every bucket, or none and the refusal of the one that would admit it last."""
        ...


def _wait(tokens: float, bucket: Bucket) -> float:
    return (1.0 - tokens) / bucket.rate


class MemoryBuckets:
    """Buckets in this process's memory: right when one process serves every request (the embedded topology).
    Safe without a lock: ``take`` never awaits, so it runs whole on the event loop."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, max_buckets: int = MAX_MEMORY_BUCKETS) -> None:
        self._clock = clock
        self._max = max_buckets
        self._state: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, when)

    async def take(self, buckets: Sequence[Bucket]) -> Refusal | None:
        return self.take_now(buckets)

    def take_now(self, buckets: Sequence[Bucket]) -> Refusal | None:
        now = self._clock()
        levels: list[float] = []
        refusal: Refusal | None = None
        for bucket in buckets:
            tokens, when = self._state.get(bucket.key, (float(bucket.burst), now))
            level = min(float(bucket.burst), tokens + max(0.0, now - when) * bucket.rate)
            levels.append(level)
            if level < 1.0 and (refusal is None or _wait(level, bucket) > refusal.retry_after):
                refusal = Refusal(bucket.limit, _wait(level, bucket))
        if refusal is not None:
            return refusal
        for bucket, level in zip(buckets, levels, strict=True):
            self._state[bucket.key] = (level - 1.0, now)
            self._state.move_to_end(bucket.key)
        while len(self._state) > self._max:
            self._state.popitem(last=False)
        return None

    def clear(self) -> None:
        self._state.clear()


# KEYS: the buckets; ARGV: rate and burst of each, in turn. Redis's clock, so every process agrees on the refill.
# Returns {0, ""} when every bucket gave a token, else {i, wait} for the bucket i (1-based) that would admit the
# request last (nothing taken). A bucket lives only as long as it takes to fill up again: a missing one is full.
TAKE_SCRIPT = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local levels = {}
local refused, longest = 0, 0
for i, key in ipairs(KEYS) do
  local rate, burst = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local state = redis.call('HMGET', key, 'tokens', 'when')
  local tokens, when = tonumber(state[1]), tonumber(state[2])
  if tokens == nil or when == nil then
    tokens, when = burst, now
  end
  local level = math.min(burst, tokens + math.max(0, now - when) * rate)
  levels[i] = level
  if level < 1 then
    local wait = (1 - level) / rate
    if wait > longest then
      refused, longest = i, wait
    end
  end
end
if refused > 0 then
  return {refused, tostring(longest)}
end
for i, key in ipairs(KEYS) do
  local rate, burst = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  redis.call('HSET', key, 'tokens', tostring(levels[i] - 1), 'when', tostring(now))
  redis.call('PEXPIRE', key, math.ceil((burst / rate) * 1000) + 1000)
end
return {0, ''}
"""


class RedisBuckets:
    """Buckets in Redis, shared by every web process: one ``EVALSHA`` per check (the script is loaded again if
    Redis lost it). Keys are ``<prefix>:{<tenant>}:<scope>:<subject>``; the braces keep one check's keys in one
    cluster slot. Fails open: an unreachable Redis admits the request, counts it and logs a warning."""

    def __init__(self, *, url: str, prefix: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._url = url
        self._prefix = prefix
        self._clock = clock
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Redis, Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._skip_until = 0.0

    def _script(self) -> Any:
        # A connection pool belongs to the event loop that opened it.
        loop = asyncio.get_running_loop()
        entry = self._clients.get(loop)
        if entry is None:
            client = Redis.from_url(self._url, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT)
            entry = (client, client.register_script(TAKE_SCRIPT))
            self._clients[loop] = entry
        return entry[1]

    def full_key(self, key: str) -> str:
        return f"{self._prefix}:{key}"

    async def take(self, buckets: Sequence[Bucket]) -> Refusal | None:
        if self._clock() < self._skip_until:
            metrics.RATE_LIMIT_BACKEND_FAILURES.inc()
            return None
        args: list[str | int] = []
        for bucket in buckets:
            args.extend((repr(bucket.rate), bucket.burst))
        try:
            refused, wait = await self._script()(keys=[self.full_key(b.key) for b in buckets], args=args)
        except Exception as exc:
            self._skip_until = self._clock() + REDIS_RETRY_AFTER_FAILURE
            metrics.RATE_LIMIT_BACKEND_FAILURES.inc()
            logger.warning(
                "rate limits not enforced for %.0f s: Redis did not answer (%s)",
                REDIS_RETRY_AFTER_FAILURE,
                type(exc).__name__,
            )
            return None
        if not refused:
            return None
        return Refusal(buckets[int(refused) - 1].limit, float(wait))

    async def close(self) -> None:
        """Close this loop's connections (tests; processes keep theirs for their lifetime)."""
        entry = self._clients.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[0].aclose()
