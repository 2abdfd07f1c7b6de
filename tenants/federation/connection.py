"""One client connection to an upstream MCP server through the official ``mcp`` SDK: Streamable HTTP (the SDK
negotiates the era) with a fallback to 2024-11-05 HTTP+SSE, through the outbound door, authenticated from tenant
secrets; what the upstream sends during a call is relayed by ``tenants.federation.relay``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged

from mcp_core.errors import ToolError
from mcp_infra.conf import platform_settings
from mcp_infra.outbound.httpx2 import outbound_httpx2_client
from mcp_infra.outbound.lean import LeanHttpClient
from tenants.connections.credentials import acts_as_person, catalog_reader_credentials
from tenants.federation.lean import LeanPath, Progress
from tenants.federation.relay import Relay, stamp_call_capabilities
from tenants.outbound_auth import credentials_for

if TYPE_CHECKING:
    from tenants.models import Upstream

logger = logging.getLogger(__name__)

JSONObject = dict[str, Any]
LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}
ELICITATION_COMPLETE = "notifications/elicitation/complete"
LISTEN_EVENTS: dict[type, str] = {
    ToolsListChanged: "tools",
    ResourcesListChanged: "resources",
    PromptsListChanged: "prompts",
}
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 300.0


class UpstreamFailure(Exception):
    """The upstream could not be reached, refused the connection, or broke it. The message is safe to show: it
    names the upstream and what went wrong, never a secret value."""


@dataclass(frozen=True)
class UpstreamTarget:
    """What a connection needs, copied from the ``Upstream`` row so no ORM access happens on the connection."""

    upstream_id: int | None
    tenant_id: int
    name: str
    url: str
    auth: JSONObject | None
    revision: int
    # The SDK's negotiation: "auto" (2026-07-28 if the upstream offers it, else the handshake) or "legacy" (a
    # 2025-11-25 session: what a tool that asks imperatively needs, see ``Upstream.session_mode``).
    mode: str = "auto"
    # A session held beside the upstream's main connection for the tools that need one (automatic mode): its era
    # is not the upstream's, so it is not recorded as such.
    for_tools: bool = False
    # A connection that acts as one person (an upstream whose auth is personal): whom, and the headers that carry
    # their credential (resolved per call by ``tenants.connections``); None and () for the tenant's own connection.
    person: int | None = None
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @classmethod
    def of(cls, upstream: Upstream, *, session: bool = False) -> UpstreamTarget:
        """The target of ``upstream``'s connection; with ``session``, of the handshake session its tools that ask
        imperatively are called in (the main connection already is one in session mode)."""
        always = upstream.session_mode == "session"
        mode = "legacy" if always or session else "auto"
        return cls(
            upstream.pk,
            upstream.tenant_id,
            upstream.name,
            upstream.url,
            upstream.auth,
            upstream.revision,
            mode,
            session and not always,
        )


def upstream_http_client(*, tenant_id: int, headers: dict[str, str], timeout: httpx2.Timeout) -> httpx2.AsyncClient:
    """The HTTP client of a connection to one of ``tenant_id``'s upstreams: through the outbound door, so the
    address policy (the tenant's widened networks included), time limits and size caps apply."""
    return outbound_httpx2_client(tenant_id=tenant_id, headers=headers, timeout=timeout)


async def auth_headers(target: UpstreamTarget) -> tuple[dict[str, str], list[str]]:
    """The headers that authenticate the platform to the upstream (the HTTP tools' auth shapes, from tenant
    secrets), and the values they hold (scrubbed from any error text). The downstream client's own token is never
    among them. Raises ``UpstreamFailure``."""
    if target.headers:
        return dict(target.headers), [value for _, value in target.headers]
    if not target.auth:
        return {}, []
    timeout = httpx.Timeout(CONNECT_TIMEOUT)
    if acts_as_person(target.auth):
        return await _catalog_reader_headers(target, timeout)
    try:
        found = await credentials_for(
            tenant_id=target.tenant_id, tool_name=f"upstream {target.name}", auth=target.auth, timeout=timeout
        )
    except ToolError as exc:
        raise UpstreamFailure(f"upstream {target.name!r}: {exc}") from None
    return found.headers, found.sensitive


async def _catalog_reader_headers(target: UpstreamTarget, timeout: httpx.Timeout) -> tuple[dict[str, str], list[str]]:
    """The headers the platform reads a personal upstream's catalog with: its machine clients' shared credentials,
    else the connection of a member who connected. Raises ``UpstreamFailure`` where there is neither."""
    assert target.auth is not None
    # An upstream being added has no id yet, and so no member connected to it: only shared credentials read it.
    credential_target = f"upstream:{target.upstream_id}" if target.upstream_id is not None else ""
    try:
        found = await catalog_reader_credentials(
            tenant_id=target.tenant_id, target=credential_target, auth=target.auth, timeout=timeout
        )
    except ToolError as exc:
        raise UpstreamFailure(f"upstream {target.name!r}: {exc}") from None
    if found is None:
        raise UpstreamFailure(
            f"upstream {target.name!r} acts as each person: its catalog is read once a member has connected"
        )
    return found.headers, found.sensitive


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups: what the SDK's task groups wrapped."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe_error(exc: BaseException, secrets: list[str]) -> str:
    """A one-line account of ``exc`` (the first leaf of an exception group), with secret values blanked out."""
    exc = _leaf(exc)
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, MCPError):
        text = f"error {exc.error.code}: {exc.error.message}"
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[secret]")
    return text[:500]


class UpstreamConnection:
    """An open SDK ``Client`` to one upstream, held by a task of its own: the SDK's transports are entered and
    left in one task, while calls come from many."""

    def __init__(
        self,
        target: UpstreamTarget,
        *,
        on_list_changed: Callable[[str], None] | None = None,
        mode: str | None = None,
        listen: bool = True,
    ) -> None:
        self.target = target
        # The SDK's negotiation: "auto" (2026-07-28 if the upstream offers it, else the handshake), "legacy" (the
        # initialize handshake only); the target's unless given.
        self.mode = mode or target.mode
        # What was negotiated, kept after the connection closes (upstream_add reports it).
        self.transport = ""
        self.protocol_version = ""
        self._on_list_changed = on_list_changed
        # Whether to hold a stream for the upstream's list changes (off while it is muted for flooding): 2026-07-28's
        # subscriptions/listen, or, when the upstream does not offer it, a handshake-era session's GET stream.
        self._listen_wanted = listen and on_list_changed is not None
        # Set when the list-change stream ended (or there is none) while the connection stays open: a watch
        # reconnects then.
        self.listen_ended = asyncio.Event()
        self.listen_kind = ""
        self._headers: dict[str, str] = {}
        self._client: Client | None = None
        self._secrets: list[str] = []
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._error: BaseException | None = None
        self._owner: asyncio.Task[None] | None = None
        # Streamable HTTP only: the session id the upstream gave (handshake era) and the lean request path.
        self._session_id: str | None = None
        # Set once the upstream answered the session's GET stream (opened or refused): what it sends outside a
        # request's own stream, a tool's imperative question included, is dropped until then.
        self._session_stream = asyncio.Event()
        self._lean: LeanPath | None = None
        # Routes what the upstream sends during a call to that call (``with connection.relay.call(ctx)``).
        self.relay = Relay()

    # ---- life cycle ------------------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect (Streamable HTTP, then HTTP+SSE when that is refused). Raises ``UpstreamFailure``."""
        headers, self._secrets = await auth_headers(self.target)
        self._headers = headers
        self._owner = asyncio.get_running_loop().create_task(self._hold(headers), name=f"upstream {self.target.name}")
        await self._ready.wait()
        if self._client is None:
            error = self._error or ConnectionError("the connection closed while opening")
            raise UpstreamFailure(f"upstream {self.target.name!r}: {describe_error(error, self._secrets)}")

    @property
    def alive(self) -> bool:
        return self._client is not None and self._owner is not None and not self._owner.done()

    async def watch_ended(self) -> None:
        """Wait until the connection closes or stops hearing the upstream's list changes."""
        if self._owner is None:
            return
        ended = asyncio.ensure_future(self.listen_ended.wait())
        try:
            await asyncio.wait({self._owner, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()

    @property
    def lean(self) -> LeanPath | None:
        """The lean request path, while the connection is open over Streamable HTTP with lean calls on."""
        return self._lean

    @property
    def client(self) -> Client:
        if self._client is None or not self.alive:
            raise UpstreamFailure(f"upstream {self.target.name!r}: the connection is closed")
        return self._client

    async def close(self) -> None:
        self._closing.set()
        if self._owner is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._owner), CONNECT_TIMEOUT)
            self._owner.cancel()

    # ---- requests ---------------------------------------------------------------------------------------
    # The lean path when it can serve the request; the SDK client otherwise, and whenever the lean path hands the
    # request back (nothing ran upstream, or the upstream wants more rounds). Results are raw wire dicts.

    async def call_tool(self, name: str, arguments: JSONObject, *, progress: Progress | None = None) -> JSONObject:
        """The upstream's ``tools/call`` result. Raises ``MCPError`` and transport errors (``OSError``, httpx2's)."""
        if self._lean is not None:
            result = await self._lean.request("tools/call", {"name": name, "arguments": arguments}, progress=progress)
            if result is not None:
                return result
        answer = await self.client.call_tool(name, arguments, progress_callback=progress)
        return answer.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def read_resource(self, uri: str) -> JSONObject:
        """The ``resources/read`` result of ``uri`` (``contents``, and the upstream's cache hints if it gave any).
        Raises as ``call_tool``."""
        if self._lean is not None:
            result = await self._lean.request("resources/read", {"uri": uri})
            if result is not None:
                return result
        answer = await self.client.read_resource(uri, cache_mode="bypass")
        return answer.model_dump(by_alias=True, mode="json", exclude_none=True, exclude_unset=True)

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> JSONObject:
        """The ``prompts/get`` result. Raises as ``call_tool``."""
        if self._lean is not None:
            result = await self._lean.request("prompts/get", {"name": name, "arguments": arguments})
            if result is not None:
                return result
        answer = await self.client.get_prompt(name, arguments)
        return answer.model_dump(by_alias=True, mode="json", exclude_none=True)

    def failure(self, exc: BaseException) -> UpstreamFailure:
        return UpstreamFailure(f"upstream {self.target.name!r}: {describe_error(exc, self._secrets)}")

    async def _hold(self, headers: dict[str, str]) -> None:
        try:
            try:
                async with self._client_for("streamable-http", headers) as client:
                    if platform_settings.UPSTREAM_LEAN_CALLS:
                        self._lean = self._lean_path(client, headers)
                    await self._opened(client, "streamable-http")
                return
            except BaseException as exc:
                # An HTTP 4xx (405 from a 2024-11-05 server's /sse) surfaces as an MCPError: try HTTP+SSE. Anything
                # else (unreachable, refused by the outbound policy, a session that broke later) is the verdict.
                if self._client is not None or not isinstance(_leaf(exc), MCPError):
                    raise
                logger.info("upstream %s refused Streamable HTTP (%s); trying HTTP+SSE", self.target.name, _leaf(exc))
            async with self._client_for("sse", headers) as client:
                await self._opened(client, "sse")
        except BaseException as exc:
            self._error = exc
            if not isinstance(exc, Exception | BaseExceptionGroup):
                raise
        finally:
            self._client = None
            if self._lean is not None:
                lean, self._lean = self._lean, None
                await lean.aclose()
            self._ready.set()

    async def _opened(self, client: Client, transport: str) -> None:
        self._client, self.transport, self.protocol_version = client, transport, client.protocol_version
        if client.protocol_version >= "2026":
            stamp_call_capabilities(client.session)
        capabilities = client.server_capabilities
        if capabilities.logging is not None and client.protocol_version < "2026":
            # Handshake era: logs flow only after the level is set; the downstream side filters by its own level.
            with contextlib.suppress(MCPError):
                await client.session.set_logging_level("debug")  # type: ignore[attr-defined]  # deprecated
        if client.protocol_version < "2026":
            # Handshake era: list changes arrive on the session's GET stream, which the SDK opens and reopens.
            self.listen_kind = "session" if self._listen_wanted else ""
            if transport == "streamable-http" and self._session_id is not None:
                # The SDK opens the GET stream beside the first calls. A server that sends a request on it (a tool
                # that samples or asks imperatively) drops what it sends before the stream is open, and the call
                # would wait for an answer to a question nobody heard: calls wait for the stream (bounded).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(CONNECT_TIMEOUT):
                        await self._session_stream.wait()
        if client.protocol_version >= "2026" and self._listen_wanted:
            # 2026-07-28: list changes arrive only on a subscriptions/listen stream. Calls wait until the upstream
            # acknowledged it (bounded), or a change a first call causes would be announced before anyone listens.
            acknowledged = asyncio.Event()
            async with asyncio.TaskGroup() as group:
                listening = group.create_task(self._listen(client, acknowledged))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(CONNECT_TIMEOUT):
                        await acknowledged.wait()
                self._ready.set()
                await self._closing.wait()
                listening.cancel()
        else:
            if not self.listen_kind:
                self.listen_ended.set()  # nothing to hear list changes on
            self._ready.set()
            await self._closing.wait()

    async def _listen(self, client: Client, acknowledged: asyncio.Event) -> None:
        assert self._on_list_changed is not None
        try:
            async with client.listen(
                tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
            ) as subscription:
                self.listen_kind = "listen"
                acknowledged.set()
                async for event in subscription:
                    kind = LISTEN_EVENTS.get(type(event))
                    if kind is not None:
                        self._on_list_changed(kind)
        except MCPError as exc:
            if exc.error.code != types.METHOD_NOT_FOUND:
                logger.info("upstream %s: no list_changed stream (%s)", self.target.name, exc)
            else:
                # A 2026-07-28 upstream without subscriptions/listen (FastMCP answers -32601) may still announce
                # changes the older way: on a handshake-era session's GET stream.
                await self._listen_in_session(acknowledged)
        except (SubscriptionLost, ListenNotSupportedError) as exc:
            logger.info("upstream %s: the list_changed stream ended (%s)", self.target.name, exc)
        finally:
            self.listen_kind = ""
            acknowledged.set()
            self.listen_ended.set()

    async def _listen_in_session(self, acknowledged: asyncio.Event) -> None:
        """Hold an initialize-handshake session with the upstream for its GET stream's list_changed notifications
        (``_on_message``); it ends with the connection, or when the upstream refuses it."""
        try:
            async with self._client_for("streamable-http", self._headers, mode="legacy", remember_session=False):
                self.listen_kind = "session"
                acknowledged.set()
                await self._closing.wait()
        except Exception as exc:
            logger.info(
                "upstream %s: no subscriptions/listen and no session to hear list changes on (%s)",
                self.target.name,
                describe_error(exc, self._secrets),
            )

    def _lean_path(self, client: Client, headers: dict[str, str]) -> LeanPath:
        http = LeanHttpClient(
            self.target.url,
            tenant_id=self.target.tenant_id,
            headers=headers,
            connect_timeout=CONNECT_TIMEOUT,
            read_timeout=READ_TIMEOUT,
        )
        return LeanPath(
            http=http,
            session=client.session,
            session_id=lambda: self._session_id,
            relay=self.relay,
            on_list_changed=self._on_list_changed,
        )

    async def _remember_session(self, response: httpx2.Response) -> None:
        # The SDK keeps the session id inside its transport; the lean path needs it too.
        session_id = response.headers.get("mcp-session-id")
        if session_id:
            self._session_id = session_id
        if response.request.method == "GET":
            self._session_stream.set()

    def _client_for(
        self, transport: str, headers: dict[str, str], *, mode: str | None = None, remember_session: bool = True
    ) -> Client:
        timeout = httpx2.Timeout(CONNECT_TIMEOUT, read=READ_TIMEOUT)
        server: Any
        if transport == "sse":

            def factory(
                headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: Any = None
            ) -> httpx2.AsyncClient:
                return upstream_http_client(
                    tenant_id=self.target.tenant_id,
                    headers=headers or {},
                    timeout=timeout or httpx2.Timeout(CONNECT_TIMEOUT, read=READ_TIMEOUT),
                )

            server = sse_client(self.target.url, headers=headers, httpx_client_factory=factory)
        else:
            http = upstream_http_client(tenant_id=self.target.tenant_id, headers=headers, timeout=timeout)
            if remember_session:
                http.event_hooks["response"].append(self._remember_session)
            server = _owning(streamable_http_client(self.target.url, http_client=http), http)
        return Client(
            server,
            cache=None,
            log_level="debug",
            read_timeout_seconds=READ_TIMEOUT,
            client_info=types.Implementation(name="mcp-platform-upstream", version="1"),
            mode=mode or self.mode,
            logging_callback=self.relay.on_log,
            message_handler=self._on_message,
            elicitation_callback=self.relay.on_elicit,
            sampling_callback=self.relay.on_sample,
            list_roots_callback=self.relay.on_roots,
        )

    async def _on_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method == ELICITATION_COMPLETE:
            await self.relay.on_elicitation_complete(message.params.elicitation_id)
            return
        kind = LIST_CHANGED.get(method) if isinstance(method, str) else None
        if kind is not None and self._on_list_changed is not None:
            self._on_list_changed(kind)


@contextlib.asynccontextmanager
async def _owning(transport: Any, http: httpx2.AsyncClient) -> Any:
    """``transport`` that also closes the HTTP client it was given (the SDK leaves a passed-in client open)."""
    async with http, transport as streams:
        yield streams
