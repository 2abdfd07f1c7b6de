"""The upstream backend: tools, resources, templates and prompts mirrored from an upstream MCP server, served by
proxying each call to it over this process's pooled session.

Results pass through as the upstream gave them (content, structuredContent, isError); an upstream that cannot be
reached, breaks the connection or answers with a protocol error becomes an isError result naming the upstream.
Progress, logs and the upstream's questions reach the downstream client through ``ctx``; cancelling the
downstream call cancels the upstream one (the SDK sends notifications/cancelled when its call is abandoned).
A tool call that runs as a platform task, to an upstream that offers tasks, becomes the upstream's own task,
followed by ``tenants.federation.remote_tasks``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_REQUEST, REQUEST_TIMEOUT

from mcp_core.content import error_result
from mcp_core.context import ToolContext
from mcp_core.errors import MISSING_CLIENT_CAPABILITY, ClientRequestFailed, InternalError, McpError, PromptError
from mcp_infra.conf import platform_settings
from mcp_infra.telemetry import metrics, spans, tally
from tenants.backends.base import PROMPTS, TEMPLATES, TOOLS, CatalogBackend, Errors
from tenants.connections.acting import caller_of
from tenants.connections.credentials import acts_as_person, call_credentials
from tenants.federation.connection import CONNECT_TIMEOUT, UpstreamConnection, UpstreamFailure, UpstreamTarget
from tenants.federation.pool import upstream_pool
from tenants.federation.relay import url_elicitations, url_visits
from tenants.federation.remote_tasks import RESULT_KEYS, call_as_task, running_task, upstream_offers_tasks
from tenants.models import Backend, Prompt, Resource, ResourceTemplate, Tool, Upstream

logger = logging.getLogger(__name__)

JSONObject = dict[str, Any]
# MCPError codes that say the connection, not the upstream's answer, failed; and the errors the SDK's Streamable
# HTTP transport makes up from an HTTP status (a session the upstream forgot on restart, a 5xx from a proxy).
TRANSPORT_CODES = frozenset({CONNECTION_CLOSED, REQUEST_TIMEOUT})
TRANSPORT_ERRORS = frozenset(
    {(INVALID_REQUEST, "Session terminated"), (INTERNAL_ERROR, "Server returned an error response")}
)
# How upstreams say a tool's server-to-client request has no way to the client on a 2026-07-28 connection.
BACK_CHANNEL_REFUSALS = (
    "no back-channel for server-initiated requests",
    "via server-initiated requests is unavailable",
)


# How many times one tool call is made when the upstream keeps answering -32042 after the person said they visited
# its pages (each time they are asked again, as the era allows); then its refusal is the result.
URL_VISIT_CALLS = 3


# The downstream method each kind of mirrored item is proxied for (the operation label of upstream metrics).
OPERATIONS: dict[type, str] = {
    Tool: "tools/call",
    Resource: "resources/read",
    ResourceTemplate: "resources/read",
    Prompt: "prompts/get",
}


def _broken_connection(exc: MCPError) -> bool:
    return exc.error.code in TRANSPORT_CODES or (exc.error.code, exc.error.message) in TRANSPORT_ERRORS


async def _upstream_of(item: Tool | Resource | ResourceTemplate | Prompt) -> Upstream:
    if item.upstream_id is None:
        raise UpstreamFailure("this item has no upstream")
    if type(item).upstream.is_cached(item):  # type: ignore[attr-defined]
        upstream = item.upstream
    else:
        upstream = await Upstream.objects.aget(pk=item.upstream_id)
    if upstream is None:
        raise UpstreamFailure("this item has no upstream")
    if not upstream.enabled:
        raise UpstreamFailure(f"upstream {upstream.name!r} is disabled")
    return upstream


async def _request(
    item: Tool | Resource | ResourceTemplate | Prompt,
    ctx: ToolContext,
    send: Any,
    *,
    bounded: bool = True,
    session: bool = False,
) -> Any:
    """``await send(connection)`` over the pooled session (with ``session``, the handshake session the upstream's
    imperatively asking tools take), counting transport failures against the circuit; within
    ``UPSTREAM_CALL_TIMEOUT`` when ``bounded`` (else ``send`` bounds itself).

    Raises ``UpstreamFailure`` (unreachable, broken, circuit open) and ``MCPError`` (the upstream's own error).
    """
    upstream = await _upstream_of(item)
    operation = OPERATIONS[type(item)]
    started = time.perf_counter()
    # Neither answered nor failed: cancelled, or ended by a question for the downstream client.
    outcome = "aborted"
    try:
        with spans.span(f"upstream {operation}", client=True, attributes={"mcp.method.name": operation}):
            result = await _request_upstream(upstream, ctx, send, bounded=bounded, session=session)
        outcome = "ok"
        return result
    except MCPError:
        outcome = "error"  # the upstream answered with an error
        raise
    except UpstreamFailure:
        outcome = "failure"
        raise
    finally:
        tally.upstream_observe(
            tenant_id=upstream.tenant_id,
            tenant=metrics.tenant_label(item),
            upstream=upstream.name,
            operation=operation,
            outcome=outcome,
            started=started,
        )


async def _person_target(target: UpstreamTarget, upstream: Upstream, ctx: ToolContext) -> UpstreamTarget:
    """``target`` acting as the call's person: their credential in its headers (asking them to connect first where
    they have none). Raises ``ToolError`` and what asking raises."""
    assert upstream.auth is not None
    found = await call_credentials(
        tenant_id=upstream.tenant_id,
        item=upstream,
        name=f"upstream {upstream.name}",
        title=f"The upstream {upstream.name}",
        auth=upstream.auth,
        ctx=ctx,
        timeout=httpx.Timeout(CONNECT_TIMEOUT),
    )
    person = caller_of(ctx).user_id
    return dataclasses.replace(target, auth=None, person=person, headers=tuple(found.headers.items()))


async def _request_upstream(upstream: Upstream, ctx: ToolContext, send: Any, *, bounded: bool, session: bool) -> Any:
    target = UpstreamTarget.of(upstream, session=session)
    if acts_as_person(upstream.auth):
        target = await _person_target(target, upstream, ctx)
    connection = await upstream_pool.connection(target)
    try:
        with connection.relay.call(ctx) as call:
            try:
                async with asyncio.timeout(platform_settings.UPSTREAM_CALL_TIMEOUT if bounded else None):
                    result = await send(connection)
            except BaseException:
                # A question for the downstream client ended the call: raise why (input_required, -32021).
                call.raise_abort()
                raise
    except MCPError as exc:
        if not _broken_connection(exc):
            return await _answered(target, exc)
        failure: UpstreamFailure = connection.failure(exc)
    except (TimeoutError, UpstreamFailure, OSError) as exc:
        failure = connection.failure(exc)
    except Exception as exc:
        if not _is_transport_error(exc):
            raise
        failure = connection.failure(exc)
    else:
        await upstream_pool.succeeded(target)
        return result
    await upstream_pool.discard(connection)
    await upstream_pool.failed(target, str(failure))
    raise failure


async def _answered(target: UpstreamTarget, exc: MCPError) -> Any:
    # The upstream is alive and said no: its error is the caller's to see, not a failure of the connection.
    await upstream_pool.succeeded(target)
    raise exc


def _raise_missing_capability(exc: MCPError, ctx: ToolContext) -> None:
    """The upstream needs a capability the downstream client did not declare (it is told only the capabilities the
    call's client has, ``upstream_relay.call_capabilities``): raise what a tool of the platform asking for it would
    (``ToolContext.require``: -32021 for a 2026-07-28 client, a failed tool in a handshake session)."""
    if exc.error.code != MISSING_CLIENT_CAPABILITY or not isinstance(exc.error.data, dict):
        return
    required = exc.error.data.get("requiredCapabilities")
    if not isinstance(required, dict):
        return
    for name, subs in required.items():
        for sub in subs if isinstance(subs, dict) and subs else (None,):
            ctx.require(name, sub)


def _is_transport_error(exc: BaseException) -> bool:
    import httpx2

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return isinstance(exc, httpx2.TransportError | OSError | TimeoutError | UpstreamFailure)


# ``mark(upstream, remote)`` records that the upstream's tool ``remote`` needs a session (persisted, every process
# follows); set by tenants.federation.services, which this module cannot import (it sits below the catalog cache).
SessionMarker = Callable[[Upstream, str], Awaitable[None]]
_session_marker: list[SessionMarker] = []


def set_session_marker(mark: SessionMarker) -> None:
    _session_marker[:] = [mark]


def _refuses_back_channel(text: str) -> bool:
    """Whether an upstream's error says a tool asked a server-to-client question it cannot send on a 2026-07-28
    connection (the SDK's ``NoBackChannelError``; FastMCP's refusal of elicitation there)."""
    text = text.lower()
    return any(sign in text for sign in BACK_CHANNEL_REFUSALS)


def _refusal_in(result: JSONObject) -> bool:
    if not result.get("isError"):
        return False
    texts = [block.get("text", "") for block in result.get("content", []) if isinstance(block, dict)]
    return any(isinstance(text, str) and _refuses_back_channel(text) for text in texts)


def _needs_session(tool: Tool, upstream: Upstream) -> bool:
    return upstream.session_mode == Upstream.SessionMode.SESSION or (
        upstream.session_mode == Upstream.SessionMode.AUTO and tool.config["remote"]["name"] in upstream.session_tools
    )


async def tool_invoke(tool: Tool, arguments: JSONObject, ctx: ToolContext) -> JSONObject:
    """The upstream tool's result, or an isError result saying why the upstream could not answer.

    In automatic mode, a tool whose upstream refuses its question on 2026-07-28 (no back-channel) is recorded as
    needing a session and called in one from then on; this call fails saying so, and the client's retry works (the
    platform never repeats it: what the tool did before its question may not happen twice behind the user)."""
    try:
        upstream = await _upstream_of(tool)
    except UpstreamFailure as exc:
        return error_result(f"The upstream tool {tool.name} could not be called: {exc}")
    session = _needs_session(tool, upstream)
    result = await _tool_call(tool, arguments, ctx, session=session)
    if session or upstream.session_mode != Upstream.SessionMode.AUTO or not isinstance(result, _Refusal):
        return result.answer if isinstance(result, _Refusal) else result
    for mark in _session_marker:
        await mark(upstream, tool.config["remote"]["name"])
    return error_result(
        f"The upstream tool {tool.name} asks questions while it runs, which its upstream {upstream.name!r} "
        "answers only in a session (the upstream's session mode). The platform calls it in a session from now on: "
        "call it again."
    )


@dataclass(frozen=True)
class _Refusal:
    """The upstream refused the tool's question for want of a back-channel; ``answer`` is what the client gets."""

    answer: JSONObject


async def _tool_call(tool: Tool, arguments: JSONObject, ctx: ToolContext, *, session: bool) -> JSONObject | _Refusal:
    remote = tool.config["remote"]["name"]

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        # Not increasing: the downstream rule refuses it; the call goes on without that one.
        with contextlib.suppress(ValueError):
            await ctx.report_progress(progress, total, message)

    async def call(connection: UpstreamConnection) -> JSONObject:
        # A progress token only when the downstream client asked for progress: with one, an upstream that reports
        # progress answers with an event stream whose notifications nobody would read.
        wire = await connection.call_tool(remote, arguments, progress=progress if ctx.wants_progress else None)
        return {key: wire[key] for key in RESULT_KEYS if key in wire}

    # A platform task (on a worker) calls an upstream that offers tasks as a task of its own, and follows it for
    # as long as the task lives; any other call is answered within the call timeout.
    run = running_task.get()

    async def send(connection: UpstreamConnection) -> JSONObject:
        client = connection.client
        if run is None or not upstream_offers_tasks(client, tool.config["remote"]):
            async with asyncio.timeout(platform_settings.UPSTREAM_CALL_TIMEOUT):
                return await call(connection)
        assert connection.target.upstream_id is not None
        return await call_as_task(
            client, upstream_id=connection.target.upstream_id, remote=remote, arguments=arguments, ctx=ctx, run=run
        )

    calls = 0
    while True:
        calls += 1
        try:
            result: JSONObject = await _request(tool, ctx, send, bounded=False, session=session)
        except UpstreamFailure as exc:
            return error_result(f"The upstream tool {tool.name} could not be called: {exc}")
        except MCPError as exc:
            visits = url_elicitations(exc.error)
            if visits and calls < URL_VISIT_CALLS:
                # The upstream did nothing yet: once the person says they visited its pages, it is asked again.
                await url_visits(ctx, visits, exc.error.message)
                continue
            _raise_missing_capability(exc, ctx)
            refused = error_result(f"The upstream refused the call to {tool.name}: {exc.error.message}")
            return _Refusal(refused) if _refuses_back_channel(exc.error.message) else refused
        result.setdefault("content", [])
        return _Refusal(result) if _refusal_in(result) else result


async def resource_read(resource: Resource, ctx: ToolContext) -> list[JSONObject]:
    """The upstream's contents of the resource. Raises ``McpError`` (the upstream's code, or -32603 when it cannot
    be reached)."""
    return await _read(resource, resource.uri, ctx)


async def template_read(template: ResourceTemplate, uri: str, ctx: ToolContext) -> list[JSONObject]:
    """The upstream's contents of ``uri`` (which matched the template). Raises ``McpError`` as ``resource_read``."""
    return await _read(template, uri, ctx)


async def _read(item: Resource | ResourceTemplate, uri: str, ctx: ToolContext) -> list[JSONObject]:
    async def send(connection: UpstreamConnection) -> JSONObject:
        return await connection.read_resource(uri)

    try:
        result: JSONObject = await _request(item, ctx, send)
    except UpstreamFailure as exc:
        raise InternalError(f"The resource {uri} could not be read: {exc}", http_status=200) from None
    except MCPError as exc:
        with contextlib.suppress(ClientRequestFailed):  # a read has no failed-tool answer: the upstream's error
            _raise_missing_capability(exc, ctx)
        error = McpError(f"The upstream could not read {uri}: {exc.error.message}")
        error.code = exc.error.code
        raise error from None
    ttl_ms, scope = _cache_hints_of(result)
    ctx.limit_cache(ttl_ms, scope)
    contents: list[JSONObject] = result.get("contents", [])
    return contents


def _cache_hints_of(result: JSONObject) -> tuple[int, str]:
    """The upstream's hints, the missing ones (a handshake-era upstream gives none) as ttlMs 0 and private: it
    promised nothing, and the platform cannot see its content change, so it promises nothing either."""
    ttl_ms = result.get("ttlMs")
    if not isinstance(ttl_ms, int) or isinstance(ttl_ms, bool) or ttl_ms < 0:
        ttl_ms = 0
    return ttl_ms, ("public" if result.get("cacheScope") == "public" else "private")


async def prompt_render(prompt: Prompt, arguments: dict[str, str], ctx: ToolContext) -> JSONObject:
    """``{messages, description?}`` from the upstream. Raises ``PromptError`` when the upstream cannot answer."""
    remote = prompt.config["remote"]["name"]

    async def send(connection: UpstreamConnection) -> JSONObject:
        wire = await connection.get_prompt(remote, arguments)
        return {key: wire[key] for key in ("messages", "description") if key in wire}

    try:
        rendered: JSONObject = await _request(prompt, ctx, send)
    except UpstreamFailure as exc:
        raise PromptError(f"The upstream prompt {prompt.name} could not be rendered: {exc}") from None
    except MCPError as exc:
        _raise_missing_capability(exc, ctx)
        raise PromptError(f"The upstream refused the prompt {prompt.name}: {exc.error.message}") from None
    return rendered


# ---- the plug (``tenants.backends.plugs`` lists it) ---------------------------------------------------------


def mirrored_item_errors(item: Tool | ResourceTemplate | Prompt) -> list[str]:
    """An item mirrored from an upstream: it names its upstream and the upstream's own definition."""
    config = item.config
    if item.upstream_id is None:
        return ["Only items mirrored from an upstream MCP server use the upstream backend."]
    if not isinstance(config, dict) or not isinstance(config.get("remote"), dict):
        return ['An upstream item needs config {"remote": {...the upstream\'s definition...}, "mirrored": {...}}.']
    if not isinstance(config["remote"].get("name"), str):
        return ["The upstream definition in config.remote has no name."]
    return []


class UpstreamBackend(CatalogBackend):
    """Items are written by the mirror (``tenants.federation.mirror``), never by hand: the check only makes sure an
    item names its upstream and the upstream's definition. A call that runs as a platform task becomes the
    upstream's own task where the upstream offers tasks (``tenants.federation.remote_tasks``)."""

    choice = Backend.UPSTREAM
    title = "upstream"
    serves = (TOOLS, TEMPLATES, PROMPTS)
    chosen_by_hand = False

    async def tool_invoke(self, tool: Tool, arguments: JSONObject, ctx: ToolContext) -> JSONObject:
        return await tool_invoke(tool, arguments, ctx)

    async def template_read(
        self, template: ResourceTemplate, uri: str, variables: dict[str, str], ctx: ToolContext
    ) -> list[JSONObject]:
        return await template_read(template, uri, ctx)

    async def resource_read(self, resource: Resource, ctx: ToolContext) -> list[JSONObject] | None:
        return await resource_read(resource, ctx)

    async def prompt_render(self, prompt: Prompt, arguments: dict[str, str], ctx: ToolContext) -> JSONObject:
        return await prompt_render(prompt, arguments, ctx)

    def tool_config_errors(self, tool: Tool, *, found: Errors) -> Errors:
        return {"config": mirrored_item_errors(tool)}

    def template_config_errors(self, template: ResourceTemplate) -> Errors:
        return {"config": mirrored_item_errors(template)}

    def prompt_config_errors(self, prompt: Prompt, *, argument_names: set[str]) -> Errors:
        errors = {"config": mirrored_item_errors(prompt)}
        if prompt.messages:
            errors["messages"] = ["An upstream prompt's messages come from the upstream: leave them empty."]
        return errors
