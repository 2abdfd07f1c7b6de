"""What an upstream sends while it serves a call, relayed to that call's ``ToolContext``: logs, the completion of
a URL-mode elicitation, and its elicitation, sampling and roots requests (progress goes by the call's own progress
callback).

The SDK carries the sender's contextvars to the handlers of what arrives on a request's response stream
(Streamable HTTP) and runs the 2026-07-28 input_required driver in the caller's task, so ``_current`` finds the
call. Over HTTP+SSE nothing says which call a message belongs to: with one call in flight it goes to that one.

A question the downstream client must answer by retrying (2026-07-28: the ledger raises ``InputRequired``), or
cannot answer (a capability it did not declare), ends the upstream call: the call is cancelled (the upstream hears
notifications/cancelled) and the backend re-raises the reason, so the downstream request gets its input_required
result or protocol error. The retry runs the call again from the start and the question, asked again by the
upstream, is answered from the ledger: the upstream receives each answer exactly once, as a Python tool replays.

An upstream that answers a call with -32042 (``URLElicitationRequiredError``: the person must visit its pages first)
has each page asked of the downstream client as the call's era allows (``ToolContext.require_url_visit``:
an ``input_required`` question, our own -32042, or a failed tool carrying the link), all in one round; once the person
says they went, the backend makes the call again (``url_visits``).

A 2026-07-28 upstream is told the client capabilities of each request. For a request made for a downstream call,
those are the capabilities the platform relays that the call's client declared (``call_capabilities``): the upstream
asks only what that client can answer, and a tool that adapts to its client does so through the platform as it would
directly. Outside a call (discovery, refreshes, the listen stream) the platform declares everything it relays.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.client.session import ClientRequestContext

from mcp_core.context import ToolContext, url_elicitation
from mcp_core.errors import URL_ELICITATION_REQUIRED, ClientRequestFailed, McpError, UrlElicitationRequired
from mcp_core.mrtr import InputRequired

JSONObject = dict[str, Any]


@dataclass(eq=False)
class UpstreamCall:
    """One downstream call being served by the upstream: its context, its task, and why it was ended (if so)."""

    ctx: ToolContext
    task: asyncio.Task[Any] | None
    abort: BaseException | None = None
    # The question belongs to an upstream task (2025-11-25 tasks/result), which keeps it for the next start: the
    # refusal that ends our side must not reach the upstream while it still waits for this answer.
    hold_refusal: bool = False

    def raise_abort(self) -> None:
        """After the call's task was cancelled for a question: raise the reason instead (and take back the
        cancellation this module asked for)."""
        if self.abort is None:
            return
        if self.task is not None:
            self.task.uncancel()
        raise self.abort


_current: ContextVar[UpstreamCall | None] = ContextVar("upstream_call", default=None)
# How long a refusal is held back (see ``UpstreamCall.hold_refusal``): longer than an upstream keeps waiting on a
# request whose tasks/result was cancelled; the connection's read timeout.
HOLD_REFUSAL_SECONDS = 300.0
# How long a question's refusal waits for its call's cancellation to be sent upstream.
CLOSE_ROUND_SECONDS = 5.0


def current_call() -> UpstreamCall | None:
    """The downstream call the upstream request being made in this context serves (None outside ``Relay.call``)."""
    return _current.get()


def call_capabilities(offered: Mapping[str, Any], ctx: ToolContext) -> JSONObject:
    """What the platform declares to a 2026-07-28 upstream for one downstream call: each capability it relays
    (``offered``) that the call's client declared, with the sub-capabilities both name (an empty elicitation stays
    empty: form mode, as the client meant it)."""
    mirrored: JSONObject = {}
    for name, ours in offered.items():
        if not ctx.client_declares(name):
            continue
        if isinstance(ours, dict):
            mirrored[name] = {key: value for key, value in ours.items() if ctx.client_declares(name, key)}
        else:
            mirrored[name] = ours
    return mirrored


def stamp_call_capabilities(session: Any) -> None:
    """Make a 2026-07-28 SDK session (and the lean path, which stamps through it) declare ``call_capabilities`` on
    the requests made for a downstream call. The SDK stamps every request's ``_meta`` with one function set when the
    era was negotiated; this wraps it."""
    stamp: Callable[[JSONObject, Any], None] = session._stamp

    def stamp_for_call(data: JSONObject, options: Any) -> None:
        stamp(data, options)
        call = _current.get()
        if call is not None:
            meta = data["params"]["_meta"]
            offered = meta.get(types.CLIENT_CAPABILITIES_META_KEY) or {}
            meta[types.CLIENT_CAPABILITIES_META_KEY] = call_capabilities(offered, call.ctx)

    session._stamp = stamp_for_call


# The pages of one -32042 that are relayed at most (a hostile upstream could name thousands).
MAX_URL_VISITS = 8


def url_elicitations(error: types.ErrorData) -> list[JSONObject]:
    """The URL-mode elicitations an upstream's -32042 names (the well-formed ones, at most ``MAX_URL_VISITS``);
    empty for any other error."""
    if error.code != URL_ELICITATION_REQUIRED or not isinstance(error.data, dict):
        return []
    listed = error.data.get("elicitations")
    found: list[JSONObject] = []
    for item in listed if isinstance(listed, list) else []:
        if not isinstance(item, dict):
            continue
        message, url, elicitation_id = item.get("message"), item.get("url"), item.get("elicitationId")
        if isinstance(message, str) and isinstance(url, str) and url and isinstance(elicitation_id, str):
            found.append(url_elicitation(message, url, elicitation_id))
    return found[:MAX_URL_VISITS]


async def url_visits(ctx: ToolContext, elicitations: list[JSONObject], message: str) -> None:
    """Send the person to each page of an upstream's -32042 as the call's era allows, together: every open question
    in one ``input_required`` round, every page in one -32042 of our own. Returns once each was accepted (the caller
    calls the upstream again). Raises ``InputRequired``, ``UrlElicitationRequired`` (with the upstream's
    ``message``) and ``ToolError`` (declined, or the client cannot be sent to a page)."""
    open_question: InputRequired | None = None
    required: list[JSONObject] = []
    for item in elicitations:
        try:
            await ctx.require_url_visit(item["message"], item["url"], item["elicitationId"])
        except InputRequired as exc:
            open_question = open_question or exc
        except UrlElicitationRequired as exc:
            required.extend(exc.data["elicitations"])
    if open_question is not None:
        raise open_question
    if required:
        raise UrlElicitationRequired(message, data={"elicitations": required})


def _refused(message: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=message)


class Relay:
    """The SDK client callbacks of one upstream connection."""

    def __init__(self) -> None:
        self._calls: dict[int, UpstreamCall] = {}

    @contextlib.contextmanager
    def call(self, ctx: ToolContext) -> Iterator[UpstreamCall]:
        """Route what arrives for requests made inside this block to ``ctx``."""
        call = UpstreamCall(ctx, asyncio.current_task())
        token = _current.set(call)
        self._calls[id(call)] = call
        try:
            yield call
        finally:
            self._calls.pop(id(call), None)
            _current.reset(token)

    def _current(self) -> UpstreamCall | None:
        call = _current.get()
        if call is None and len(self._calls) == 1:
            call = next(iter(self._calls.values()))
        return call

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        call = self._current()
        if call is not None:
            await call.ctx.log(params.level, params.data, params.logger)

    async def on_elicitation_complete(self, elicitation_id: str) -> None:
        """The upstream says a URL-mode elicitation of the call has completed: the call's client is told (where its
        era has the notice). One that arrives outside a call (its session's GET stream) is not relayed."""
        call = self._current()
        if call is not None:
            await call.ctx.elicitation_complete(elicitation_id)

    async def _ask(self, ask: Callable[[ToolContext], Awaitable[Any]]) -> Any:
        call = self._current()
        if call is None:
            return _refused("No downstream call is waiting for this answer")
        try:
            return await ask(call.ctx)
        except ClientRequestFailed as exc:
            return _refused(str(exc))
        except (InputRequired, McpError) as exc:
            call.abort = exc
            if call.task is not None:
                call.task.cancel()
            if call.hold_refusal:
                # The upstream task's tasks/result, cancelled just now, stops waiting for this answer; an error that
                # reached it first would fail the question. Closing the connection ends the wait sooner.
                await asyncio.sleep(HOLD_REFUSAL_SECONDS)
            elif call.task is not None and call.task is not asyncio.current_task():
                # Answered by the SDK in a task of its own: let the call's cancellation reach the upstream first, so
                # the round ends there as cancelled, not as a failed question its tool logs. (On the lean path the
                # question is answered in the call's own task, whose cancellation stops the answer being sent.)
                await asyncio.wait({call.task}, timeout=CLOSE_ROUND_SECONDS)
            return _refused("The question goes to the downstream client first")

    async def on_elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        wire = params.model_dump(by_alias=True, mode="json", exclude_none=True)

        async def ask(ctx: ToolContext) -> Any:
            if wire.get("mode") == "url":
                answer = await ctx.elicit_url(wire["message"], wire["url"], wire["elicitationId"])
            else:
                answer = await ctx.elicit(wire["message"], wire.get("requestedSchema", {}))
            return types.ElicitResult.model_validate(answer)

        answer: types.ElicitResult | types.ErrorData = await self._ask(ask)
        return answer

    async def on_sample(self, context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        wire = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        wire.pop("_meta", None)
        messages, max_tokens = wire.pop("messages"), wire.pop("maxTokens")

        async def ask(ctx: ToolContext) -> Any:
            return types.CreateMessageResult.model_validate(await ctx.sample(messages, max_tokens, **wire))

        return await self._ask(ask)

    async def on_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        async def ask(ctx: ToolContext) -> Any:
            return types.ListRootsResult.model_validate({"roots": await ctx.list_roots()})

        answer: types.ListRootsResult | types.ErrorData = await self._ask(ask)
        return answer
