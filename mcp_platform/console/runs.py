"""One tool run from the admin's console: the same ``mcp_core.dispatch`` the endpoint answers with, as a 2025-11-25
client that declares elicitation and sampling, whose messages become events for the admin's page.

The JSON-RPC messages of the run (the console's requests and answers, the server's notifications, questions and
responses) go to the page as they pass the dispatch seam, in their wire form, and are kept with the run's outcome in
the admin's run history (``history.py``).

The run lives in the web process holding the page's event stream. The page's answers to the tool's questions and
its cancel button may reach any web process: they travel to the run on the channel layer (the mailbox), in groups
named by tenant, admin and run, so nobody else's answer can reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.utils import timezone

from mcp_core import jsonrpc, sse
from mcp_core.dispatch import dispatch
from mcp_core.env import Env
from mcp_core.errors import ClientRequestFailed, McpError, RateLimited, error_to_wire
from mcp_core.versions import V2025_11_25
from mcp_infra.conf import platform_settings
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import mailbox, send_to_group
from mcp_platform.console.history import Exchange, console_run_record, run_summary
from mcp_platform.console.limits import console_limits_check
from mcp_platform.gateway.observing import call_info
from mcp_platform.jobs.models import RunOrigin
from mcp_platform.jobs.store import ToolRunStore
from mcp_platform.observe.calls import ADMIN_CONSOLE, CallInfo, observed_call
from tenants.cache import tenant_cache
from tenants.connections.acting import CONSOLE_CLIENT, Caller
from tenants.identity import server_identity
from tenants.models import Tenant, Tool

logger = logging.getLogger(__name__)

JSONObject = dict[str, Any]

# The console speaks the newest handshake-era revision: server-to-client requests fit a live page, and tasks are
# asked for per call (``params.task``), so the admin chooses.
CONSOLE_VERSION = V2025_11_25
# What the page can answer: form-mode elicitation (a form from the requested schema) and sampling (by hand).
CONSOLE_CAPABILITIES: JSONObject = {"elicitation": {"form": {}}, "sampling": {}}
# Arguments larger than this are refused before anything runs (bytes of their JSON).
MAX_ARGUMENT_BYTES = 64 * 1024
# One console run (its questions and, for a task, the wait for its result included) ends after this (seconds).
MAX_RUN_SECONDS = 900.0
# How long a page that went away waits for a task being created, to cancel it (seconds).
CREATE_WAIT_SECONDS = 10.0
# Answers to a question larger than this are refused (bytes of their JSON).
MAX_ANSWER_BYTES = 256 * 1024


@dataclass(frozen=True)
class ConsoleCall:
    """What the admin asked for: ``tool`` with ``arguments``, as ``user_id``, perhaps as a task."""

    tool: Tool
    user_id: int
    arguments: JSONObject
    as_task: bool = False
    # The platform's address as the admin's browser reached it (links in the run's questions point there).
    base_url: str = ""

    @property
    def tenant(self) -> Tenant:
        return self.tool.tenant

    @property
    def principal(self) -> str:
        """Whom the run is attributed to, named as the gateway names a person (``user:<id>``)."""
        return f"user:{self.user_id}"


def new_run_id() -> str:
    return secrets.token_urlsafe(18)


def answer_group(*, tenant_id: int, user_id: int, run_id: str) -> str:
    return groups.console_group(tenant_id, user_id, run_id, "answer")


def control_group(*, tenant_id: int, user_id: int, run_id: str) -> str:
    return groups.console_group(tenant_id, user_id, run_id, "control")


async def console_answer(*, tenant_id: int, user_id: int, run_id: str, request_id: str, answer: JSONObject) -> None:
    """Deliver the page's answer (``{"result": ...}`` or ``{"error": ...}``) to question ``request_id`` of a run."""
    group = answer_group(tenant_id=tenant_id, user_id=user_id, run_id=run_id)
    await send_to_group(group, {"request_id": request_id, **answer})


async def console_cancel(*, tenant_id: int, user_id: int, run_id: str) -> None:
    """Ask a run to stop: an inline call is cancelled, a task is cancelled through ``tasks/cancel``."""
    await send_to_group(control_group(tenant_id=tenant_id, user_id=user_id, run_id=run_id), {"kind": "cancel"})


def event(name: str, data: JSONObject) -> bytes:
    return sse.event(json.dumps(data, separators=(",", ":")), event=name)


class WireLog:
    """The run's JSON-RPC messages as they pass the dispatch seam: each is encoded as the wire carries it
    (``mcp_core.jsonrpc``), queued for the page as a ``wire`` event and kept for the run history."""

    def __init__(self, *, events: asyncio.Queue[bytes], exchange: Exchange) -> None:
        self._events = events
        self.exchange = exchange

    async def _add(self, direction: str, encoded: bytes) -> None:
        message = orjson.loads(encoded)
        self.exchange.add(direction, message)
        await self._events.put(event("wire", {"direction": direction, "message": message}))

    async def sent_request(self, request_id: str, method: str, params: JSONObject) -> None:
        await self._add("sent", jsonrpc.encode_request(request_id, method, params))

    async def sent_answer(self, request_id: str, message: JSONObject) -> None:
        if isinstance(message.get("error"), dict):
            await self._add("sent", jsonrpc.encode_error(request_id, message["error"]))
        else:
            await self._add("sent", jsonrpc.encode_result(request_id, message.get("result") or {}))

    async def received_request(self, request_id: str, method: str, params: JSONObject) -> None:
        await self._add("received", jsonrpc.encode_request(request_id, method, params))

    async def received_notification(self, method: str, params: JSONObject) -> None:
        await self._add("received", jsonrpc.encode_notification(method, params))

    async def received_result(self, request_id: str, result: JSONObject) -> None:
        await self._add("received", jsonrpc.encode_result(request_id, result))

    async def received_error(self, request_id: str, exc: BaseException) -> None:
        await self._add("received", jsonrpc.encode_error(request_id, error_to_wire(exc)[1]))

    async def dispatch(self, request_id: str, method: str, params: JSONObject, env: Env) -> JSONObject:
        """``mcp_core.dispatch`` of one console request, its request and its response (or error) logged."""
        await self.sent_request(request_id, method, params)
        try:
            result = await dispatch(method, params, env)
        except Exception as exc:
            await self.received_error(request_id, exc)
            raise
        await self.received_result(request_id, result)
        return result


class ConsoleOutbound:
    """``mcp_core.context.Outbound`` of a console run: notifications and questions become page events; answers
    arrive through the run's answer group, from whichever process the page's POST reached."""

    def __init__(self, *, events: asyncio.Queue[bytes], group: str, wire: WireLog) -> None:
        self._events = events
        self._group = group
        self._wire = wire
        self._waiting: dict[str, asyncio.Future[JSONObject]] = {}

    async def start(self) -> None:
        await mailbox().subscribe(self._group, self._deliver)

    async def stop(self) -> None:
        await mailbox().unsubscribe(self._group, self._deliver)

    def _deliver(self, message: JSONObject) -> None:
        waiting = self._waiting.get(str(message.get("request_id")))
        if waiting is not None and not waiting.done():
            waiting.set_result(message)

    async def notify(self, method: str, params: JSONObject) -> None:
        await self._wire.received_notification(method, params)
        await self._events.put(event("notification", {"method": method, "params": params}))

    async def release(self) -> None:
        """The page's stream cannot be resumed: it stays open."""

    async def request(self, method: str, params: JSONObject) -> JSONObject:
        request_id = secrets.token_urlsafe(12)
        answer: asyncio.Future[JSONObject] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = answer
        try:
            await self._wire.received_request(request_id, method, params)
            await self._events.put(event("request", {"id": request_id, "method": method, "params": params}))
            try:
                message = await asyncio.wait_for(answer, platform_settings.CLIENT_REQUEST_TIMEOUT)
            except TimeoutError:
                raise ClientRequestFailed(f"the console did not answer {method} in time") from None
            finally:
                await self._events.put(event("answered", {"id": request_id}))
        finally:
            del self._waiting[request_id]
        await self._wire.sent_answer(request_id, message)
        if isinstance(message.get("error"), dict):
            error = message["error"]
            raise ClientRequestFailed(str(error.get("message", "declined")), code=int(error.get("code", -1)))
        result = message.get("result")
        if not isinstance(result, dict):
            raise ClientRequestFailed(f"the console's {method} answer is not an object")
        return result


def console_env(*, call: ConsoleCall, run_id: str, outbound: ConsoleOutbound) -> Env:
    """The ``Env`` a gateway request of a 2025-11-25 session would carry, for the admin: the tenant's whole catalog
    (an admin holds no token scopes), progress asked for, every log level, tasks bound to this run."""
    return Env(
        version=CONSOLE_VERSION,
        catalog=tenant_cache.catalog(call.tenant, None),
        outbound=outbound,
        server=server_identity(call.tenant),
        client_capabilities=CONSOLE_CAPABILITIES,
        log_level="debug",
        page_size=platform_settings.PAGE_SIZE,
        meta={"progressToken": run_id},
        tasks=ToolRunStore.bound(
            tenant_id=call.tenant.pk,
            principal=call.principal,
            session_id=f"console-{run_id}",
            protocol_version=CONSOLE_VERSION,
            client_address="",
            origin=RunOrigin(
                client_name="admin console", transport=ADMIN_CONSOLE, request_id=run_id, base_url=call.base_url
            ),
        ),
        # The console runs as the signed-in admin, with their own connections.
        caller=Caller(call.user_id, CONSOLE_CLIENT, base_url=call.base_url),
    )


class ConsoleRun:
    """One run: the call (and, for a task, the wait for its result) in its own asyncio task, its events queued for
    the page, and the cancel signal heard on the run's control group."""

    def __init__(self, *, call: ConsoleCall, run_id: str) -> None:
        self.call = call
        self.run_id = run_id
        self.events: asyncio.Queue[bytes] = asyncio.Queue()
        self.wire = WireLog(events=self.events, exchange=Exchange.of(call.tool.input_schema))
        self._control = control_group(tenant_id=call.tenant.pk, user_id=call.user_id, run_id=run_id)
        answers = answer_group(tenant_id=call.tenant.pk, user_id=call.user_id, run_id=run_id)
        self.outbound = ConsoleOutbound(events=self.events, group=answers, wire=self.wire)
        self.env = console_env(call=call, run_id=run_id, outbound=self.outbound)
        self._task_id: str | None = None
        self._cancel_asked = False
        self._work: asyncio.Task[None] | None = None
        self._creating: asyncio.Future[JSONObject] | None = None
        self._side: set[asyncio.Task[Any]] = set()

    async def _call(self) -> JSONObject:
        params: JSONObject = {"name": self.call.tool.name, "arguments": self.call.arguments, "_meta": self.env.meta}
        if not self.call.as_task:
            return await self._observed_dispatch(params)
        params["task"] = {}
        # Shielded: a page that goes away while the task is being created must still learn its id to cancel it.
        self._creating = asyncio.ensure_future(self._observed_dispatch(params))
        result = await asyncio.shield(self._creating)
        task = result.get("task")
        if not isinstance(task, dict):
            return result
        self._task_id = str(task["taskId"])
        await self.events.put(event("task", task))
        if self._cancel_asked:
            # Asked while the task was being created: interrupting the creation could leave a task nobody follows.
            await self._cancel_task()
        # tasks/result relays the task's progress, logs, status changes and questions on this run's outbound.
        return await self.wire.dispatch(f"{self.run_id}-result", "tasks/result", {"taskId": self._task_id}, self.env)

    async def _observed_dispatch(self, params: JSONObject) -> JSONObject:
        """The ``tools/call``, observed like an endpoint's call (the activity log, the usage dashboard and /metrics
        count it) and counted against the tenant's limits where it limits the console."""
        request = jsonrpc.Request(id=self.run_id, method="tools/call", params=params)
        async with observed_call(self._call_info(request)) as observed:
            await console_limits_check(tenant=self.call.tenant, request=request)
            result = await self.wire.dispatch(self.run_id, "tools/call", params, self.env)
            observed.succeed(result)
        return result

    def _call_info(self, request: jsonrpc.Request) -> CallInfo:
        return call_info(
            tenant_id=self.call.tenant.pk,
            tenant_slug=self.call.tenant.slug,
            request=request,
            principal=self.call.principal,
            client_info={"name": "admin console", "version": ""},
            protocol_version=CONSOLE_VERSION,
            transport=ADMIN_CONSOLE,
            headers=None,
            keep_arguments=self.call.tenant.activity_record_arguments,
        )

    async def _created_task(self) -> None:
        """Learn the id of a task whose creation the run was interrupted in (bounded), so it can be cancelled."""
        if self._task_id is not None or self._creating is None:
            return
        with contextlib.suppress(Exception):
            async with asyncio.timeout(CREATE_WAIT_SECONDS):
                task = (await self._creating).get("task")
            if isinstance(task, dict):
                self._task_id = str(task["taskId"])

    async def _cancel_task(self) -> None:
        if self._task_id is None:
            return
        with contextlib.suppress(McpError):
            await self.wire.dispatch(f"{self.run_id}-cancel", "tasks/cancel", {"taskId": self._task_id}, self.env)

    def _heard(self, message: JSONObject) -> None:
        if message.get("kind") != "cancel" or self._work is None or self._work.done():
            return
        self._cancel_asked = True
        if not self.call.as_task:
            # Inline: stop the call where it is, as notifications/cancelled stops a gateway request.
            self._work.cancel()
        elif self._task_id is not None:
            side = asyncio.create_task(self._cancel_task())
            self._side.add(side)
            side.add_done_callback(self._side.discard)

    async def _work_body(self) -> None:
        started_at = timezone.now()
        started = time.perf_counter()
        outcome: JSONObject
        try:
            async with asyncio.timeout(MAX_RUN_SECONDS):
                result = await self._call()
            outcome = {"outcome": "tool_error" if result.get("isError") else "ok", "result": result}
        except asyncio.CancelledError:
            if not self._cancel_asked:
                raise
            outcome = {"outcome": "cancelled"}
        except TimeoutError:
            await self._cancel_task()
            outcome = {"outcome": "error", "error": {"message": f"The console run took over {MAX_RUN_SECONDS:g} s"}}
        except RateLimited as exc:
            outcome = {"outcome": "rate_limited", "error": error_to_wire(exc)[1]}
        except Exception as exc:
            if not isinstance(exc, McpError):
                logger.exception("console run of %s failed", self.call.tool.name)
            outcome = {"outcome": "cancelled" if self._cancel_asked else "error", "error": error_to_wire(exc)[1]}
        outcome["durationMs"] = round((time.perf_counter() - started) * 1000, 1)
        if self._task_id is not None:
            outcome["taskId"] = self._task_id
        outcome["record"] = await self._recorded(started_at, outcome)
        await self.events.put(event("outcome", outcome))

    async def _recorded(self, started_at: dt.datetime, outcome: JSONObject) -> JSONObject | None:
        """Keep the finished run in the admin's history; its summary for the page (None if it could not be kept:
        the run's outcome still reaches the page)."""
        try:
            record = await sync_to_async(console_run_record)(
                tool=self.call.tool,
                user_id=self.call.user_id,
                run_id=self.run_id,
                started_at=started_at,
                duration_ms=outcome["durationMs"],
                as_task=self.call.as_task,
                task_id=self._task_id or "",
                outcome=outcome["outcome"],
                arguments=self.call.arguments,
                result=outcome.get("result"),
                error=outcome.get("error"),
                exchange=self.wire.exchange,
            )
        except Exception:
            logger.exception("the console run of %s could not be kept in the history", self.call.tool.name)
            return None
        return run_summary(record)

    async def stream(self) -> AsyncIterator[bytes]:
        """The page's events, from the run's id to its outcome. Closing the stream (the page went away) stops the
        run, and cancels its task if it became one."""
        box = mailbox()
        await self.outbound.start()
        await box.subscribe(self._control, self._heard)
        try:
            yield event("run", {"runId": self.run_id, "tool": self.call.tool.name, "asTask": self.call.as_task})
            self._work = asyncio.create_task(self._work_body())
            while True:
                try:
                    async with asyncio.timeout(platform_settings.SSE_KEEPALIVE):
                        chunk = await self.events.get()
                except TimeoutError:
                    if self._work.done() and self.events.empty():
                        break
                    yield sse.comment()
                    continue
                yield chunk
                if chunk.startswith(b"event: outcome\n"):
                    break
        finally:
            await self._stop()
            await box.unsubscribe(self._control, self._heard)
            await self.outbound.stop()

    async def _stop(self) -> None:
        work = self._work
        if work is not None and not work.done():
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
            await asyncio.shield(self._created_task())
            await asyncio.shield(self._cancel_task())
        for side in list(self._side):
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await side
