"""The lean path of a proxied request (``tools/call``, ``resources/read``, ``prompts/get``) on an established
Streamable HTTP session: one JSON-RPC POST through the outbound door's lean client (``mcp_infra.outbound.lean``),
headers and ``_meta`` stamped by the SDK session itself, the answer read without the SDK's models and task groups.

It relays what the SDK path relays when the upstream answers with an event stream: progress, logs, list changes,
the completion of a URL-mode elicitation, and the upstream's elicitation, sampling and roots requests (answered by
POST, through ``Relay``). A cancelled call closes its POST (2026-07-28) or sends notifications/cancelled (handshake
era). It hands the call back to the SDK (``None``) only before anything ran upstream or when the upstream asks for
more rounds (``input_required``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Any

import httpx2
import mcp_types as types
import orjson
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import ProgressFnT as Progress
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter, ValidationError

from mcp_infra.outbound.lean import LeanHttpClient, LeanHttpError, LeanResponse
from tenants.federation.relay import Relay, current_call

logger = logging.getLogger(__name__)

JSONObject = dict[str, Any]
# Our ids never meet the SDK's (it counts from 0 on the same session; handshake-era servers track ids per session).
FIRST_ID = 1 << 40
MAX_SSE_EVENT = 1024 * 1024  # the SDK's own limit per event
COMPLETE = (None, "complete")
_elicit_params: TypeAdapter[Any] = TypeAdapter(types.ElicitRequestParams)


class LeanPath:
    """Requests of one upstream connection made without the SDK client. ``request`` returns the raw JSON-RPC
    result, or ``None`` when the SDK must make the call (nothing reached the upstream, or it wants more rounds).
    Raises ``MCPError`` (the upstream's error, or the SDK's words for an HTTP failure) and ``LeanHttpError``."""

    def __init__(
        self,
        *,
        http: LeanHttpClient,
        session: ClientSession,
        session_id: Callable[[], str | None],
        relay: Relay,
        on_list_changed: Callable[[str], None] | None,
    ) -> None:
        self._http = http
        self._session = session
        self._session_id = session_id
        self._relay = relay
        self._on_list_changed = on_list_changed
        self._ids = itertools.count(FIRST_ID)
        self._modern = session.protocol_version is not None and session.protocol_version >= "2026"
        self._background: set[asyncio.Task[None]] = set()

    @property
    def http(self) -> LeanHttpClient:
        return self._http

    async def aclose(self) -> None:
        await self._http.aclose()

    def _headers(self, extra: dict[str, str]) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream", **extra}
        session_id = self._session_id()
        if session_id:
            headers["mcp-session-id"] = session_id
        return headers

    async def request(self, method: str, params: JSONObject, *, progress: Progress | None = None) -> JSONObject | None:
        request_id = next(self._ids)
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        opts: dict[str, Any] = {}
        # The session's own stamp: the era's headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*) and
        # 2026-07-28's per-request _meta, as the SDK path sends them; then the log level and the progress token only
        # as far as the downstream call asked for logs and progress.
        self._session._stamp(message, opts)  # type: ignore[arg-type]
        if self._modern:
            self._ask_logs(params)
        if progress is not None:
            params.setdefault("_meta", {})["progressToken"] = request_id
        headers = self._headers(opts.get("headers", {}))
        try:
            response = await self._http.post(orjson.dumps(message), headers)
            try:
                return await self._answer(response, request_id, progress)
            finally:
                await response.aclose()
        except asyncio.CancelledError:
            # Cancelled once the request may have been sent: the upstream must hear of it.
            self._cancelled(request_id)
            raise

    @staticmethod
    def _ask_logs(params: JSONObject) -> None:
        """2026-07-28: ask for the log messages the downstream call passes on, from its threshold up; none when it
        passes none (the stamp asks for every level, which makes an upstream that logs answer with an event stream
        of messages that would be dropped here)."""
        call = current_call()
        if call is None:
            return
        meta = params["_meta"]
        threshold = call.ctx.log_threshold
        if threshold is None:
            meta.pop(types.LOG_LEVEL_META_KEY, None)
        else:
            meta[types.LOG_LEVEL_META_KEY] = threshold

    async def _answer(self, response: LeanResponse, request_id: int, progress: Progress | None) -> JSONObject | None:
        content_type = response.headers.get("content-type", "").lower()
        if 300 <= response.status < 400:
            return None  # not followed here and not run upstream: the SDK applies its same-origin redirect rule
        if response.status == 202:
            raise MCPError(types.INVALID_REQUEST, "server answered a request with 202 Accepted")
        if response.status >= 400:
            raise await self._http_error(response, content_type)
        if content_type.startswith("application/json"):
            return _result(orjson.loads(await response.read()))
        if content_type.startswith("text/event-stream"):
            return await self._stream(response, request_id, progress)
        raise LeanHttpError(f"unexpected response content type {content_type!r}")

    async def _http_error(self, response: LeanResponse, content_type: str) -> MCPError:
        # As the SDK's transport: the JSON-RPC error in the body if there is one, else its stand-ins.
        body = await response.read()
        if content_type.startswith("application/json"):
            try:
                error = orjson.loads(body).get("error")
                return MCPError(int(error["code"]), str(error["message"]), error.get("data"))
            except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
                pass
        if response.status == 404:
            if self._session_id() is not None:
                return MCPError(types.INVALID_REQUEST, "Session terminated")
            return MCPError(types.METHOD_NOT_FOUND, "Not Found")
        return MCPError(types.INTERNAL_ERROR, "Server returned an error response")

    async def _stream(self, response: LeanResponse, request_id: int, progress: Progress | None) -> JSONObject | None:
        # httpx2's maintained SSE decoder (per-event size cap) over the lean connection's body.
        wrapped = httpx2.Response(
            response.status,
            headers=response.headers,
            stream=_Body(response),
            request=httpx2.Request("POST", "http://upstream/"),
        )
        async for event in httpx2.EventSource(wrapped, max_event_size=MAX_SSE_EVENT):
            if event.event != "message" or not event.data:
                continue
            message = orjson.loads(event.data)
            if not isinstance(message, dict):
                continue
            if message.get("id") == request_id and "method" not in message:
                response.release_after_end()
                return _result(message)
            if "method" not in message:
                continue
            if "id" in message:
                await self._answer_request(message)
            else:
                await self._notification(message, request_id, progress)
        raise LeanHttpError("the upstream's event stream ended before its response")

    async def _notification(self, message: JSONObject, request_id: int, progress: Progress | None) -> None:
        method, params = message["method"], message.get("params") or {}
        if method == "notifications/progress":
            if progress is not None and params.get("progressToken") == request_id:
                await progress(float(params["progress"]), params.get("total"), params.get("message"))
        elif method == "notifications/message":
            await self._relay.on_log(types.LoggingMessageNotificationParams.model_validate(params))
        elif method == "notifications/elicitation/complete" and isinstance(params.get("elicitationId"), str):
            await self._relay.on_elicitation_complete(params["elicitationId"])
        elif method.endswith("/list_changed") and self._on_list_changed is not None:
            self._on_list_changed(method.removeprefix("notifications/").removesuffix("/list_changed"))

    async def _answer_request(self, message: JSONObject) -> None:
        """The upstream asks (handshake era, on this call's stream): ``Relay`` asks the downstream client, and the
        answer goes back by POST, as the SDK's dispatcher sends it."""
        method, params = message["method"], message.get("params") or {}
        answer: Any
        try:
            if method == "elicitation/create":
                answer = await self._relay.on_elicit(None, _elicit_params.validate_python(params))  # type: ignore[arg-type]
            elif method == "sampling/createMessage":
                answer = await self._relay.on_sample(
                    None,  # type: ignore[arg-type]
                    types.CreateMessageRequestParams.model_validate(params),
                )
            elif method == "roots/list":
                answer = await self._relay.on_roots(None)  # type: ignore[arg-type]
            elif method == "ping":
                answer = types.EmptyResult()
            else:
                answer = types.ErrorData(code=types.METHOD_NOT_FOUND, message=f"Method not found: {method}")
        except ValidationError as exc:
            answer = types.ErrorData(code=types.INVALID_PARAMS, message=f"Invalid params: {exc.error_count()} errors")
        wire = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        reply: JSONObject = {"jsonrpc": "2.0", "id": message["id"]}
        reply["error" if isinstance(answer, types.ErrorData) else "result"] = wire
        await self._post_quietly(reply)

    def _cancelled(self, request_id: int) -> None:
        # 2026-07-28: the POST's connection is closed (the response is closed unread), which is the signal. The
        # handshake era needs the notification, sent without holding up the cancelled caller.
        if self._modern:
            return
        notice = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the downstream call was cancelled"},
        }
        task = asyncio.get_running_loop().create_task(self._post_quietly(notice))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _post_quietly(self, message: JSONObject) -> None:
        version = self._session.protocol_version
        extra = {"mcp-protocol-version": version} if version else {}
        try:
            response = await self._http.post(orjson.dumps(message), self._headers(extra))
            await response.read()
        except (LeanHttpError, MCPError) as exc:
            logger.info("could not send %s upstream: %s", message.get("method", "an answer"), exc)


class _Body(httpx2.AsyncByteStream):
    def __init__(self, response: LeanResponse) -> None:
        self._response = response

    async def __aiter__(self) -> Any:
        async for chunk in self._response.iter_bytes():
            yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()


def _result(message: Any) -> JSONObject | None:
    """The result of a JSON-RPC response; ``None`` for an ``input_required`` (or other non-final) result. Raises
    ``MCPError`` for an error response and ``LeanHttpError`` for something that is no response."""
    if not isinstance(message, dict):
        raise LeanHttpError("the upstream's answer is not a JSON-RPC response")
    error = message.get("error")
    if isinstance(error, dict):
        raise MCPError(int(error.get("code", types.INTERNAL_ERROR)), str(error.get("message", "")), error.get("data"))
    result = message.get("result")
    if not isinstance(result, dict):
        raise LeanHttpError("the upstream's answer is not a JSON-RPC response")
    if result.get("resultType") not in COMPLETE:
        return None
    return result
