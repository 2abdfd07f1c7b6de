"""``GET /healthz`` and ``GET /readyz``: whether this process answers, and whether it should be sent requests.

ASGI in front of Django, so its host check, sessions and CSRF never see a probe (``asgi.py``): an orchestrator's
probe names the pod's address as its host, and must cost little more than its answer. ``/healthz`` touches nothing:
200 while the process runs, draining or not (restarting a draining process would cut off what it is finishing).
``/readyz`` is 503 while the process drains (``mcp_infra.serving.drain``), and otherwise asks the database and, with
``REDIS_URL``, Redis, both at once and each within ``CHECK_TIMEOUT``: 503 unless both answer. Probes that arrive
while a check runs share it. The public answer is one word; loopback clients and holders of the metrics token
(``telemetry.access``) get JSON saying which check failed and how long each took. A change of readiness is logged
once, not at every probe.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections
from redis.asyncio import Redis

from mcp_infra.addresses import scope_header
from mcp_infra.postgresql import aio
from mcp_infra.serving.drain import process_drain
from mcp_infra.serving.probes import LIVENESS_PATH, PROBE_PATHS
from mcp_platform.oauth.throttling import asgi_client_address
from mcp_platform.telemetry.access import is_loopback, presents_metrics_token

logger = logging.getLogger(__name__)

# How long each dependency may take to answer a readiness check (seconds).
CHECK_TIMEOUT = 1.0
# The most of a failure's text the details show.
ERROR_CHARS = 200


@dataclass(frozen=True)
class Check:
    """One dependency's answer to a readiness check."""

    ok: bool
    seconds: float
    error: str = ""

    def details(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"ok": self.ok, "seconds": round(self.seconds, 4)}
        if self.error:
            shown["error"] = self.error
        return shown


async def _database() -> None:
    if aio.available():
        await aio.execute("SELECT 1")
    else:
        await sync_to_async(_select_one)()


def _select_one() -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")


_redis_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Redis] = weakref.WeakKeyDictionary()


async def _redis() -> None:
    loop = asyncio.get_running_loop()
    client = _redis_clients.get(loop)
    if client is None:
        client = _redis_clients[loop] = Redis.from_url(
            settings.REDIS_URL, socket_timeout=CHECK_TIMEOUT, socket_connect_timeout=CHECK_TIMEOUT
        )
    await client.ping()  # type: ignore[misc]


async def _timed(probe: Callable[[], Awaitable[None]]) -> Check:
    started = time.perf_counter()
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            await probe()
    except TimeoutError:
        return Check(False, time.perf_counter() - started, f"no answer within {CHECK_TIMEOUT:g} s")
    except Exception as exc:
        text = str(exc).strip().splitlines()
        error = f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
        return Check(False, time.perf_counter() - started, error[:ERROR_CHARS])
    return Check(True, time.perf_counter() - started)


async def _dependencies() -> dict[str, Check]:
    probes: dict[str, Callable[[], Awaitable[None]]] = {"database": _database}
    if settings.REDIS_URL:
        probes["redis"] = _redis
    checks = await asyncio.gather(*(_timed(probe) for probe in probes.values()))
    return dict(zip(probes, checks, strict=True))


_check_running: asyncio.Task[dict[str, Check]] | None = None
_last_ready: bool | None = None


async def dependency_checks() -> dict[str, Check]:
    """Every dependency's answer now; probes arriving meanwhile share this check."""
    global _check_running
    task = _check_running
    if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
        task = _check_running = asyncio.ensure_future(_dependencies())
    return await asyncio.shield(task)


def _note(ready: bool, checks: dict[str, Check]) -> None:
    """Log a change of readiness (not every probe: an orchestrator asks every few seconds)."""
    global _last_ready
    if ready == _last_ready:
        return
    if not ready:
        failed = ", ".join(f"{name} ({check.error})" for name, check in checks.items() if not check.ok)
        logger.warning("not ready: %s", failed)
    elif _last_ready is not None:
        logger.warning("ready again")
    _last_ready = ready


async def readiness() -> tuple[int, dict[str, Any]]:
    """The status and the details of ``/readyz``."""
    if process_drain.draining:
        return 503, {"status": "draining", "draining": True}
    checks = await dependency_checks()
    ready = all(check.ok for check in checks.values())
    _note(ready, checks)
    details = {name: check.details() for name, check in checks.items()}
    return (200 if ready else 503), {"status": "ready" if ready else "not ready", "draining": False, "checks": details}


def liveness() -> tuple[int, dict[str, Any]]:
    """The status and the details of ``/healthz``: the process answers."""
    return 200, {"status": "ok", "pid": os.getpid(), "draining": process_drain.draining}


def sees_details(scope: dict[str, Any]) -> bool:
    """Loopback clients and holders of the metrics token are told more than a word."""
    return presents_metrics_token(scope_header(scope, b"authorization") or "") or is_loopback(
        asgi_client_address(scope)
    )


async def _answer(send: Any, status: int, body: bytes, content_type: bytes, *, head: bool) -> None:
    headers = [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body, "more_body": False})


class HealthEndpoints:
    """ASGI: the probes' two paths are answered here; every other request goes on to ``app``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] not in PROBE_PATHS:
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            body = b"Method Not Allowed\n"
            headers = [(b"content-type", b"text/plain"), (b"allow", b"GET, HEAD")]
            await send({"type": "http.response.start", "status": 405, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        status, details = liveness() if scope["path"] == LIVENESS_PATH else await readiness()
        if sees_details(scope):
            await _answer(send, status, json.dumps(details).encode(), b"application/json", head=method == "HEAD")
        else:
            word = f"{details['status']}\n".encode()
            await _answer(send, status, word, b"text/plain; charset=utf-8", head=method == "HEAD")
