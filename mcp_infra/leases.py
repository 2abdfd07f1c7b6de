"""A lease that one process of the deployment holds at a time, taken over when its holder dies.

With ``REDIS_URL``: a Redis key set only if absent, with a time to live its holder renews (a holder that stops
renewing, killed or hung, loses it within the time to live). Embedded (no Redis): an exclusive lock on a file in
``VAR_DIR``, which the kernel releases when the holding process ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import uuid
from pathlib import Path
from typing import IO, Protocol

from django.conf import settings
from redis.asyncio import Redis

logger = logging.getLogger(__name__)

# Renew only if we still hold it: compare and extend in one step.
RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
REDIS_TIMEOUT = 2.0


class Lease(Protocol):
    async def hold(self) -> bool:
        """Take the lease or keep it (renewing it); True while this process holds it. Never raises."""

    async def release(self) -> None: ...


class RedisLease:
    def __init__(self, url: str, name: str, ttl: float) -> None:
        self._url = url
        self._key = f"mcp:lease:{name}"
        self._token = uuid.uuid4().hex
        self._ttl_ms = int(ttl * 1000)
        self._client: Redis | None = None
        self._held = False

    def _redis(self) -> Redis:
        if self._client is None:
            self._client = Redis.from_url(self._url, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT)
        return self._client

    async def hold(self) -> bool:
        try:
            client = self._redis()
            if self._held and await client.eval(RENEW, 1, self._key, self._token, self._ttl_ms):  # type: ignore[misc]
                return True
            self._held = bool(await client.set(self._key, self._token, nx=True, px=self._ttl_ms))
        except Exception as exc:
            # Redis unreachable: another process may take the lease once ours runs out, so stop acting on it.
            logger.warning("could not renew the lease %s (%s)", self._key, exc)
            self._held = False
        return self._held

    async def release(self) -> None:
        if self._held:
            with contextlib.suppress(Exception):
                await self._redis().eval(RELEASE, 1, self._key, self._token)  # type: ignore[misc]
        self._held = False
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.aclose()
            self._client = None


class FileLease:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._file: IO[bytes] | None = None

    async def hold(self) -> bool:
        if self._file is not None:
            return True
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            handle = self._path.open("ab")
        except OSError as exc:
            logger.warning("could not open the lease file %s (%s)", self._path, exc)
            return False
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        os.set_inheritable(handle.fileno(), False)
        self._file = handle
        return True

    async def release(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def deployment_lease(name: str, *, ttl: float) -> Lease:
    """The lease ``name`` of this deployment: in Redis when ``REDIS_URL`` is set, else a file lock."""
    if settings.REDIS_URL:
        return RedisLease(settings.REDIS_URL, name, ttl)
    return FileLease(Path(settings.VAR_DIR) / f"{name}.lease")
