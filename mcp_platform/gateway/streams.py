"""Where a request's messages go while it runs, and the run itself.

``PostStream`` answers one POST: JSON while the handlers stay quiet, SSE from the first notification or
server-to-client request on. Its events are stored before they are sent, so a client that lost the
connection can replay them with ``Last-Event-ID``; a dropped connection does not stop the work.
``SessionSink`` routes everything of an HTTP+SSE (2024-11-05) session to that session's GET stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from typing import Any, Protocol

from mcp_core import jsonrpc, sse
from mcp_core.dispatch import dispatch
from mcp_core.env import Env
from mcp_core.errors import ClientRequestFailed, McpError
from mcp_infra.conf import platform_settings
from mcp_infra.messaging import groups
from mcp_infra.messaging.mailbox import mailbox, send_to_group
from mcp_infra.serving.drain import process_drain
from mcp_platform.gateway.control import request_key, session_control
from mcp_platform.gateway.responses import Headers, Send, send_chunk, send_empty, send_json, start_sse, wire_error
from mcp_platform.gateway.sessions import (
    RUN_LOST,
    new_token,
    post_stream_followed,
    post_stream_open,
    post_stream_renew,
    session_stream_event_count,
    stream_event_append,
)
from mcp_platform.observe.calls import CallInfo, observed_call

logger = logging.getLogger(__name__)

PROGRESS = "notifications/progress"
LOG_MESSAGE = "notifications/message"
# How many notifications a stream stores between two counts of its session's stored events.
SESSION_COUNT_EVERY = 100

# Runs detached from their HTTP response are kept referenced here until they finish (routing, not state); with the
# tasks of the HTTP requests to the MCP endpoint (added and removed by the consumer itself, which costs no loop
# callback), they are what this process's drain waits for, and the POST streams they answer on what it releases
# (``gateway.drain``).
_running: set[asyncio.Task[Any]] = set()
requests_in_flight: set[asyncio.Task[Any]] = set()
_streams_running: set[PostStream] = set()


def drain_cut_off(request_id: Any) -> bytes | None:
    """The answer to a request this process's drain cut off (stopped: the client may send it again if that is safe,
    to another process); None for any other cancellation, which goes unanswered."""
    return jsonrpc.encode_error(request_id, wire_error(RUN_LOST)[1]) if process_drain.expired else None


class Sink(Protocol):
    async def message(self, payload: bytes) -> None: ...

    async def notify(self, method: str, params: dict[str, Any]) -> None: ...

    async def response(self, payload: bytes | None) -> None: ...

    async def release(self) -> None: ...


class PostStream:
    """The response to one POST that carried ``expected`` requests."""

    def __init__(
        self,
        *,
        send: Send,
        tenant_id: int,
        session_id: str,
        request_ids: list[str | int],
        expected: int,
        batch: bool,
        priming: bool,
        headers: Headers,
    ) -> None:
        self._send = send
        self._tenant_id = tenant_id
        self._session_id = session_id
        self._request_ids = request_ids
        self._expected = expected
        self._batch = batch
        self._priming = priming
        self._headers = headers
        self._buffered: list[bytes] = []
        self._mode = "json"
        self._attached = True
        self._lock = asyncio.Lock()
        self._stream_id = ""
        self._seq = 0
        self._keepalive: asyncio.Task[None] | None = None
        self._runs: set[asyncio.Task[Any]] = set()
        self.done = asyncio.Event()
        # The bounds on what the stream stores (``STREAM_MAX_NOTIFICATIONS``, ``SESSION_MAX_STREAM_EVENTS``): the
        # notifications stored so far, whether the session was full when last counted, the latest progress held
        # back per token, and how many other notifications were dropped.
        self._notifications = 0
        self._session_full = False
        self._held_progress: dict[str, bytes] = {}
        self._dropped = 0
        self._detached_at: float | None = None

    def adopt(self, run: asyncio.Task[Any]) -> None:
        """A run answering on this stream: cancelled if the stream is ended in this process's place."""
        self._runs.add(run)
        _streams_running.add(self)
        run.add_done_callback(self._run_ended)

    def _run_ended(self, run: asyncio.Task[Any]) -> None:
        self._runs.discard(run)
        if not self._runs:
            _streams_running.discard(self)

    def detach(self) -> None:
        """The client went away: keep storing events for a resumption, stop writing to the socket. Unless a client
        resumes the stream within ``STREAM_RESUME_GRACE``, its requests are cancelled (``_keep_alive``)."""
        self._attached = False
        if self._detached_at is None:
            self._detached_at = time.monotonic()

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """A notification of a running request: stored and sent while the bounds allow; past them progress is held
        back (the latest per token, written before the last response) and anything else dropped and counted."""
        async with self._lock:
            if self._mode == "done":
                return
            if self._mode == "json":
                await self._open_sse()
            payload = jsonrpc.encode_notification(method, params)
            if await self._room_for_notification():
                self._notifications += 1
                await self._event(payload, final=False)
            elif method == PROGRESS:
                self._held_progress[json.dumps(params.get("progressToken"))] = payload
            else:
                self._dropped += 1

    async def _room_for_notification(self) -> bool:
        if self._session_full or self._notifications >= platform_settings.STREAM_MAX_NOTIFICATIONS:
            return False
        # The session's stored events are counted now and then (not per event): the session bound may be passed
        # by at most that many events per stream open at once. A full session stays full (events only expire).
        if self._notifications % SESSION_COUNT_EVERY == 0:
            stored = await session_stream_event_count(session_id=self._session_id)
            self._session_full = stored >= platform_settings.SESSION_MAX_STREAM_EVENTS
        return not self._session_full

    async def _write_held_back(self) -> None:
        """Before the last response: the latest progress held back, and one log message saying what was dropped."""
        for payload in self._held_progress.values():
            await self._event(payload, final=False)
        self._held_progress.clear()
        if self._dropped:
            text = (
                f"{self._dropped} notifications of this request were dropped: a request stream keeps at most "
                f"{platform_settings.STREAM_MAX_NOTIFICATIONS} (and a session "
                f"{platform_settings.SESSION_MAX_STREAM_EVENTS} events)"
            )
            params = {"level": "warning", "logger": "mcp-platform", "data": text}
            await self._event(jsonrpc.encode_notification(LOG_MESSAGE, params), final=False)
            self._dropped = 0

    async def message(self, payload: bytes) -> None:
        async with self._lock:
            if self._mode == "done":
                return
            if self._mode == "json":
                await self._open_sse()
            await self._event(payload, final=False)

    async def response(self, payload: bytes | None) -> None:
        """A request's answer, or None when it was cancelled and must go unanswered."""
        async with self._lock:
            self._expected -= 1
            last = self._expected == 0
            if self._mode == "done":
                return
            if self._mode == "json":
                if payload is not None:
                    self._buffered.append(payload)
                if last:
                    await self._finish_json()
                return
            if last:
                await self._write_held_back()
            if payload is not None or last:
                # A last request that was cancelled still stores the stream's end (an empty event, never sent),
                # so a resumer stops there instead of waiting for the lease to lapse.
                await self._event(payload or b"", final=last)
            if last:
                await self._close()

    async def release(self) -> None:
        """End the HTTP response early with a ``retry:`` hint; the client resumes with ``Last-Event-ID``.

        Only for clients that know SSE polling (2025-11-25 sessions, which got a priming event). Asked by a tool
        (``ctx.release_connection``), and by this process's drain."""
        async with self._lock:
            if not self._priming or not self._attached or self._mode == "done":
                return
            if self._mode == "json":
                await self._open_sse()
            await send_chunk(self._send, sse.retry(platform_settings.SSE_RETRY_MS), more=False)
            self.detach()
            self.done.set()

    async def _finish_json(self) -> None:
        self._mode = "done"
        if self._attached:
            if not self._buffered:
                await send_empty(self._send, 202, self._headers)
            elif self._batch:
                await send_json(self._send, 200, jsonrpc.encode_batch(self._buffered), self._headers)
            else:
                await send_json(self._send, 200, self._buffered[0], self._headers)
        self.done.set()

    async def _open_sse(self) -> None:
        self._mode = "sse"
        self._stream_id = new_token()
        await post_stream_open(session_id=self._session_id, stream_id=self._stream_id, request_ids=self._request_ids)
        self._keepalive = asyncio.create_task(self._keep_alive())
        if not self._attached:
            return
        await start_sse(self._send, self._headers)
        if self._priming:
            event_id = sse.make_event_id(self._stream_id, 0)
            await send_chunk(self._send, sse.priming(event_id, platform_settings.SSE_RETRY_MS))
        else:
            await send_chunk(self._send, sse.comment("stream open"))
        for payload in self._buffered:
            await self._event(payload, final=False)
        self._buffered.clear()

    async def _event(self, payload: bytes, *, final: bool) -> None:
        self._seq += 1
        text = payload.decode()
        await stream_event_append(
            session_id=self._session_id,
            stream_id=self._stream_id,
            seq=self._seq,
            payload=text,
            is_final=final,
        )
        if self._attached:
            if payload:
                event_id = sse.make_event_id(self._stream_id, self._seq)
                await send_chunk(self._send, sse.event(payload, id=event_id))
        else:
            group = groups.stream_group(self._tenant_id, self._session_id, self._stream_id)
            await send_to_group(group, {"seq": self._seq, "payload": text, "final": final})

    async def _close(self) -> None:
        self._mode = "done"
        if self._keepalive is not None:
            self._keepalive.cancel()
        if self._attached:
            await send_chunk(self._send, b"", more=False)
        self.done.set()

    async def _keep_alive(self) -> None:
        """Renew the stream's lease (attached or not: a resumer elsewhere judges by it) and keep the socket busy."""
        while True:
            await asyncio.sleep(platform_settings.SSE_KEEPALIVE)
            async with self._lock:
                if self._mode != "sse":
                    return
                try:
                    renewed = await post_stream_renew(session_id=self._session_id, stream_id=self._stream_id)
                except Exception:
                    logger.warning("could not renew the lease of stream %s", self._stream_id, exc_info=True)
                    renewed = True  # the resumer decides when the lease has lapsed
                if not renewed:
                    await self._lost()
                    return
                if self._attached:
                    await send_chunk(self._send, sse.comment())
                elif await self._abandoned():
                    self._abandon()

    async def _abandoned(self) -> bool:
        """The client left and nobody resumed the stream within the grace: its requests have no one to answer."""
        grace = platform_settings.STREAM_RESUME_GRACE
        if self._detached_at is None or time.monotonic() - self._detached_at < grace:
            return False
        try:
            followed = await post_stream_followed(session_id=self._session_id, stream_id=self._stream_id, within=grace)
        except Exception:
            logger.warning("could not tell whether stream %s is followed", self._stream_id, exc_info=True)
            return False
        return not followed

    def _abandon(self) -> None:
        """Cancel the requests (an upstream call hears notifications/cancelled); their end is stored as usual."""
        if self._runs:
            logger.info("stream %s: the client left and did not resume; cancelling its requests", self._stream_id)
        for run in list(self._runs):
            run.cancel()

    async def _lost(self) -> None:
        """A resumer found the lease lapsed and answered the requests in this process's place: stop them."""
        logger.warning("stream %s was ended by a resumer; cancelling its requests", self._stream_id)
        self._mode = "done"
        for run in list(self._runs):
            run.cancel()
        if self._attached:
            self._attached = False
            with contextlib.suppress(Exception):
                await send_chunk(self._send, b"", more=False)
        self.done.set()


class SessionSink:
    """Everything of an HTTP+SSE (2024-11-05) session travels on that session's one GET stream."""

    def __init__(self, *, tenant_id: int, session_id: str) -> None:
        self._group = groups.session_group(tenant_id, session_id)

    async def message(self, payload: bytes) -> None:
        await send_to_group(self._group, {"kind": "message", "payload": payload.decode()})

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.message(jsonrpc.encode_notification(method, params))

    async def response(self, payload: bytes | None) -> None:
        if payload is not None:
            await self.message(payload)

    async def release(self) -> None:
        """The HTTP+SSE transport cannot resume a stream: the connection stays."""


class SinkOutbound:
    """``mcp_core.context.Outbound`` over a sink: notifications, and requests answered via the mailbox."""

    def __init__(self, *, sink: Sink, tenant_id: int, session_id: str) -> None:
        self._sink = sink
        self._tenant_id = tenant_id
        self._session_id = session_id

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._sink.notify(method, params)

    async def release(self) -> None:
        await self._sink.release()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = f"srv-{secrets.token_urlsafe(12)}"
        group = groups.server_request_group(self._tenant_id, self._session_id, request_id)
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

        def deliver(message: dict[str, Any]) -> None:
            if not answer.done():
                answer.set_result(message)

        box = mailbox()
        await box.subscribe(group, deliver)
        try:
            await self._sink.message(jsonrpc.encode_request(request_id, method, params))
            try:
                message = await asyncio.wait_for(answer, platform_settings.CLIENT_REQUEST_TIMEOUT)
            except TimeoutError:
                raise ClientRequestFailed(f"the client did not answer {method} in time") from None
        finally:
            await box.unsubscribe(group, deliver)
        if "error" in message:
            error = message["error"]
            raise ClientRequestFailed(
                str(error.get("message", "error")),
                code=int(error.get("code", -32603)),
                data=error.get("data"),
            )
        result = message.get("result")
        if not isinstance(result, dict):
            raise ClientRequestFailed(f"the client's {method} result is not an object")
        return result


async def run_request(
    *, request: jsonrpc.Request, env: Env, sink: Sink, tenant_id: int, session_id: str, info: CallInfo
) -> None:
    """Answer one request on ``sink``; ``notifications/cancelled`` from any process stops it unanswered (the
    process has joined the tenant's control group: the session was looked up through ``session_cache``).
    ``info`` describes the call to the observation hooks."""
    task = asyncio.current_task()
    assert task is not None
    payload: bytes | None
    with session_control.running(request_key(tenant_id, session_id, request.id), task), observed_call(info) as call:
        try:
            result = await dispatch(request.method, request.params, env)
            call.succeed(result)
            payload = jsonrpc.encode_result(request.id, result)
        except asyncio.CancelledError as exc:
            call.fail(exc)
            # Cut off by this process's drain: answered as stopped (the client may send it again if that is safe),
            # where a cancelled request goes unanswered.
            payload = drain_cut_off(request.id)
        except Exception as exc:
            call.fail(exc)
            if not isinstance(exc, McpError):
                logger.exception("%s failed", request.method)
            payload = jsonrpc.encode_error(request.id, wire_error(exc)[1])
    try:
        await sink.response(payload)
    except Exception:
        logger.exception("could not deliver the response to %s", request.method)


def start_run(
    *, request: jsonrpc.Request, env: Env, sink: Sink, tenant_id: int, session_id: str, info: CallInfo
) -> asyncio.Task[None]:
    """Run the request in its own task, independent of the HTTP connection that brought it."""
    return keep_running(
        asyncio.create_task(
            run_request(request=request, env=env, sink=sink, tenant_id=tenant_id, session_id=session_id, info=info)
        )
    )


def runs_in_flight() -> set[asyncio.Task[Any]]:
    """The requests this process answers now (every era, and the runs that outlive their HTTP request)."""
    return _running | requests_in_flight


async def release_post_streams() -> None:
    """Release every POST stream that can be (``PostStream.release``): its client resumes on another process."""
    for stream in list(_streams_running):
        await stream.release()


def keep_running(task: asyncio.Task[Any] | None) -> asyncio.Task[Any]:
    """Hold a strong reference to ``task`` until it ends: the event loop keeps only weak ones, and a run may
    outlive the consumer that started it."""
    assert task is not None
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task
