"""An upstream MCP server for the federation tests, built on the official SDK's ``MCPServer`` and run as a process:
``python -m tests.upstreams.sdk_server --port N [--transport streamable-http|sse] [--name X] [--handshake-only]
[--resource URI ...]``.

``--handshake-only`` answers ``server/discover`` with -32601, as a server of the handshake era does: clients fall
back to ``initialize`` (2025-11-25), and the server's questions become server-to-client requests in the session.

``--no-listen`` answers ``subscriptions/listen`` with -32601, as FastMCP 4.2.3 does: a 2026-07-28 server that
announces list changes only on a handshake-era session's GET stream. ``--flood`` publishes
``notifications/tools/list_changed`` to its listen streams every millisecond while any is open. ``--list-cache
TTL_MS:SCOPE`` gives its list results those cache hints. ``--slow-get-stream MS`` opens a handshake-era session's
GET stream only MS milliseconds after it was asked for, as a distant or busy server may: what the server sends
outside a request's own stream before then is lost.

It records the Authorization header of every HTTP request it receives (tool ``seen_authorization``) and the calls
that were cancelled (tool ``cancelled_calls``), so tests can check what the platform forwarded. Outside MCP,
``POST /grow?name=X`` adds a tool and announces it on every listen stream and handshake-era GET stream, and
``GET /stats`` says how many listen and GET streams are open and how many notifications were published;
``POST /reshape`` (JSON: ``name``, ``description``, ``required`` and ``optional`` argument names) replaces a tool (or
adds it) with one of that description and those string arguments, and announces it the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import uuid
from collections import Counter
from typing import Annotated, Any, TypedDict

import uvicorn
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from mcp.shared.subscriptions import ServerEvent, ToolsListChanged
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    LOG_LEVEL_META_KEY,
    CreateMessageResult,
    ElicitRequestURLParams,
    ListRootsResult,
    SamplingMessage,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.upstreams import GRACEFUL_SHUTDOWN_SECONDS
from tests.upstreams.bodies import body_of, replaying

SEEN_AUTHORIZATION: list[str] = []
# Labels whose account the user connected (tool ``connect_done``): ``account_summary`` answers -32042 until then.
CONNECTED: set[str] = set()
CANCELLED: list[str] = []
ANSWERS: list[str] = []
METHODS: Counter[str] = Counter()
LIST_METHODS: tuple[CacheableMethod, ...] = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")
LIST_CHANGED_EVENT = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n'


class CountingBus(InMemorySubscriptionBus):
    """The SDK's in-memory bus, counting its open listen streams and what it published; floods when asked."""

    def __init__(self, *, flood: bool = False) -> None:
        super().__init__()
        self.listeners = 0
        self.published = 0
        self._flood = flood
        self._flooding: asyncio.Task[None] | None = None

    async def publish(self, event: ServerEvent) -> None:
        self.published += 1
        await super().publish(event)

    def subscribe(self, listener: Any) -> Any:
        unsubscribe = super().subscribe(listener)
        self.listeners += 1
        if self._flood and self._flooding is None:
            self._flooding = asyncio.get_running_loop().create_task(self._flood_forever())
        done = False

        def counted() -> None:
            nonlocal done
            if not done:
                done = True
                self.listeners -= 1
            unsubscribe()

        return counted

    async def _flood_forever(self) -> None:
        while True:
            if self.listeners:
                await self.publish(ToolsListChanged())
            await asyncio.sleep(0.001)


# Handshake-era GET streams open now: each takes one more SSE event (a notification) between the SDK's own.
GET_STREAMS: set[Any] = set()
READS: list[int] = []


class NameForm(BaseModel):
    name: str


class Weather(TypedDict):
    city: str
    celsius: float


# Resolvers ask the client in either era: a server-to-client request (handshake) or input_required (2026).
def ask_for_name() -> Elicit[NameForm]:
    return Elicit("What is your name?", NameForm)


def ask_for_haiku(topic: str) -> Sample:
    text = TextContent(type="text", text=f"A haiku on {topic}")
    return Sample([SamplingMessage(role="user", content=text)], max_tokens=50)


def ask_for_roots() -> ListRoots:
    return ListRoots()


def reshaped_tool(required: list[str], optional: list[str]) -> Any:
    """A tool function taking these string arguments (keyword-only), which says what it was called with."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter(n, keyword, annotation=str) for n in required]
    parameters += [inspect.Parameter(n, keyword, annotation=str, default="") for n in optional]

    def reshaped(**arguments: str) -> str:
        return "reshaped: " + ", ".join(f"{k}={v}" for k, v in sorted(arguments.items()))

    reshaped.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    return reshaped


def build(
    name: str,
    bus: CountingBus | None = None,
    extra_resources: list[str] | tuple[str, ...] = (),
    list_cache: CacheHint | None = None,
) -> MCPServer:
    bus = bus or CountingBus()
    hints = {method: list_cache for method in LIST_METHODS} if list_cache is not None else None
    server = MCPServer(name, instructions="Federation test upstream", subscriptions=bus, cache_hints=hints)
    for uri in extra_resources:  # listed as given, even a URI that does not parse (hostile upstreams)
        server.resource(uri, name=f"extra{len(uri)}", description="An extra resource.")(lambda: "extra")

    @server.custom_route("/grow", methods=["POST"])
    async def grow_now(request: Request) -> Response:
        name = request.query_params["name"]

        def grown() -> str:
            return f"I am {name}"

        server.add_tool(grown, name=name, description=f"Grown tool {name}")
        await bus.publish(ToolsListChanged())
        for inject in list(GET_STREAMS):
            await inject(LIST_CHANGED_EVENT)
        return JSONResponse({"added": name})

    @server.custom_route("/reshape", methods=["POST"])
    async def reshape(request: Request) -> Response:
        spec = await request.json()
        name = str(spec["name"])
        if name in {tool.name for tool in await server.list_tools()}:
            server.remove_tool(name)
        server.add_tool(
            reshaped_tool(list(spec.get("required", [])), list(spec.get("optional", []))),
            name=name,
            description=str(spec.get("description", "")),
        )
        await bus.publish(ToolsListChanged())
        for inject in list(GET_STREAMS):
            await inject(LIST_CHANGED_EVENT)
        return JSONResponse({"reshaped": name})

    @server.custom_route("/stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        counts = {"listeners": bus.listeners, "published": bus.published, "get_streams": len(GET_STREAMS)}
        return JSONResponse({**counts, "methods": dict(METHODS)})

    @server.tool(description="Say the text back.")
    def echo(text: str) -> str:
        return f"echo: {text}"

    @server.tool(description="Count to steps, reporting progress and logging each step.")
    async def slow_count(steps: int, ctx: Context) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
            await ctx.info(f"counted {step}")
        return f"counted to {steps}"

    @server.tool(description="What the call's _meta asked for: its progress token and log level (JSON).")
    def call_meta(ctx: Context) -> str:
        meta = (ctx.request_context.params or {}).get("_meta") or {}
        return json.dumps({"progressToken": meta.get("progressToken"), "logLevel": meta.get(LOG_LEVEL_META_KEY)})

    @server.tool(description="The client capabilities the call's _meta declared (JSON; null in the handshake era).")
    def call_capabilities(ctx: Context) -> str:
        meta = (ctx.request_context.params or {}).get("_meta") or {}
        return json.dumps(meta.get(CLIENT_CAPABILITIES_META_KEY))

    @server.tool(description="The weather in a city (structured).")
    def weather(city: str) -> Weather:
        return {"city": city, "celsius": 21.5}

    @server.tool(description="Always fails.")
    def fail() -> str:
        raise ValueError("the upstream tool failed on purpose")

    @server.tool(description="Add a tool called name and announce the change.")
    async def grow(name: str, ctx: Context) -> str:
        def grown() -> str:
            return f"I am {name}"

        server.add_tool(grown, name=name, description=f"Grown tool {name}")
        await ctx.notify_tools_changed()
        if (ctx.protocol_version or "") < "2026":
            await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @server.tool(description="Wait until cancelled.")
    async def wait_forever(label: str) -> str:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            CANCELLED.append(label)
            raise
        return "never"

    @server.tool(description="A hostile tool: send count log messages (0: until cancelled), then say how many.")
    async def flood_logs(label: str, count: int, ctx: Context) -> str:
        sent = 0
        try:
            while count == 0 or sent < count:
                await ctx.info(f"{label} {sent}")
                sent += 1
        except asyncio.CancelledError:
            CANCELLED.append(label)
            raise
        return f"sent {sent} log messages"

    @server.tool(description="Labels of the calls that were cancelled.")
    def cancelled_calls() -> list[str]:
        return list(CANCELLED)

    @server.tool(description="The Authorization headers of the HTTP requests received so far.")
    def seen_authorization() -> list[str]:
        return list(SEEN_AUTHORIZATION)

    @server.tool(description="Ask the user for their name.")
    async def ask_name(label: str, form: Annotated[NameForm, Resolve(ask_for_name)]) -> str:
        ANSWERS.append(f"{label}:accept")
        return f"hello {form.name}"

    @server.tool(
        description="The answers received: ask_name's as label:action, haiku:topic, roots:label, url:label:action."
    )
    def answers_received() -> list[str]:
        return list(ANSWERS)

    @server.tool(description="Ask the client's model for a haiku.")
    async def haiku(topic: str, sampled: Annotated[CreateMessageResult, Resolve(ask_for_haiku)]) -> str:
        ANSWERS.append(f"haiku:{topic}")
        return sampled.content.text if isinstance(sampled.content, TextContent) else "?"

    @server.tool(description="The client's roots.")
    async def roots(listed: Annotated[ListRootsResult, Resolve(ask_for_roots)], label: str = "") -> str:
        ANSWERS.append(f"roots:{label}")
        return ", ".join(str(root.uri) for root in listed.roots)

    # Questions asked imperatively, inside the tool: a server-to-client request, so only a session (2025-11-25)
    # carries them; on a 2026-07-28 connection the SDK refuses them (NoBackChannelError).
    @server.tool(description="Ask the user for their name, imperatively (no annotations: not safe to repeat).")
    async def ask_name_now(label: str, ctx: Context) -> str:
        ANSWERS.append(f"started:{label}")
        answer = await ctx.elicit("What is your name?", NameForm)
        ANSWERS.append(f"{label}:{answer.action}")
        return f"hello {answer.data.name}" if answer.action == "accept" and answer.data else answer.action

    @server.tool(
        description="Ask the client's model for a haiku, imperatively.", annotations=ToolAnnotations(readOnlyHint=True)
    )
    async def haiku_now(topic: str, ctx: Context) -> str:
        text = TextContent(type="text", text=f"A haiku on {topic}")
        sampled = await ctx.session.create_message([SamplingMessage(role="user", content=text)], max_tokens=50)
        ANSWERS.append(f"haiku_now:{topic}")
        return sampled.content.text if isinstance(sampled.content, TextContent) else "?"

    @server.tool(description="Send the user to a URL to connect an account (URL-mode elicitation, a new id each run).")
    async def connect_account(label: str, ctx: Context) -> str:
        elicitation_id = uuid.uuid4().hex
        answer = await ctx.elicit_url(
            "Connect your account", f"https://accounts.example/connect/{elicitation_id}", elicitation_id
        )
        ANSWERS.append(f"url:{label}:{answer.action}")
        return f"connect: {answer.action}"

    @server.tool(description="Send the user to a URL, then say the flow there has completed (its elicitationId).")
    async def connect_and_confirm(label: str, ctx: Context) -> str:
        elicitation_id = f"{label}-{uuid.uuid4().hex}"
        answer = await ctx.elicit_url(
            "Connect your account", f"https://accounts.example/connect/{elicitation_id}", elicitation_id
        )
        if answer.action == "accept":
            await ctx.session.send_elicit_complete(elicitation_id, related_request_id=ctx.request_id)
        return elicitation_id

    @server.tool(
        description="A summary of the user's account: -32042 (connect it first, a new id each call) until it is."
    )
    def account_summary(label: str) -> str:
        if label not in CONNECTED:
            elicitation_id = f"{label}-{uuid.uuid4().hex}"
            url = f"https://accounts.example/connect/{elicitation_id}"
            page = ElicitRequestURLParams(message="Connect your account", url=url, elicitation_id=elicitation_id)
            raise UrlElicitationRequiredError([page])
        return f"summary of {label}"

    @server.tool(description="Record that the user connected label's account (what account_summary's page does).")
    def connect_done(label: str) -> str:
        CONNECTED.add(label)
        return f"connected {label}"

    @server.tool(description="The client's roots, asked imperatively; records whether the question failed.")
    async def roots_now(label: str, ctx: Context) -> str:
        try:
            listed = await ctx.session.list_roots()
        except MCPError as exc:
            ANSWERS.append(f"roots_failed:{label}")
            raise ToolError(f"the roots request failed: {exc}") from exc
        ANSWERS.append(f"roots_now:{label}")
        return ", ".join(str(root.uri) for root in listed.roots)

    @server.resource("notes://clock", description="A new value on every read.")
    def clock() -> str:
        READS.append(1)
        return f"read {len(READS)}"

    @server.resource("notes://readme", description="The readme.")
    def readme() -> str:
        return "read me first"

    @server.resource("notes://topics/{topic}", description="A note on a topic.")
    def topic_note(topic: str) -> str:
        return f"a note on {topic}"

    @server.prompt(description="Greet someone.")
    def greet(name: str) -> str:
        return f"Please greet {name}."

    return server


def recording(app: Any) -> Any:
    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            SEEN_AUTHORIZATION.append(headers.get(b"authorization", b"").decode())
        await app(scope, receive, send)

    return asgi


def session_get(scope: Any) -> bool:
    """Whether ``scope`` is a handshake-era session's GET stream request."""
    headers = dict(scope.get("headers") or [])
    return bool(scope["type"] == "http" and scope["method"] == "GET" and b"mcp-session-id" in headers)


def announcing_get_streams(app: Any) -> Any:
    """``app`` whose handshake-era GET streams also carry what ``/grow`` announces, between the SDK's events."""

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if not session_get(scope):
            await app(scope, receive, send)
            return
        lock = asyncio.Lock()
        streaming = False

        async def locked_send(message: Any) -> None:
            nonlocal streaming
            async with lock:
                await send(message)
            if message["type"] == "http.response.start" and message["status"] == 200:
                streaming = True
                GET_STREAMS.add(inject)

        async def inject(data: bytes) -> None:
            async with lock:
                if streaming:
                    await send({"type": "http.response.body", "body": data, "more_body": True})

        try:
            await app(scope, receive, locked_send)
        finally:
            GET_STREAMS.discard(inject)

    return asgi


def slow_get_streams(app: Any, delay_ms: int) -> Any:
    """``app`` that opens a handshake-era session's GET stream only ``delay_ms`` after the request came in."""

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if session_get(scope):
            await asyncio.sleep(delay_ms / 1000)
        await app(scope, receive, send)

    return asgi


def inspecting(app: Any, refused: frozenset[str] = frozenset()) -> Any:
    """``app`` counting the JSON-RPC methods posted to it (``METHODS``) and answering those in ``refused`` with
    -32601 (Method not found), as a server that does not implement them."""

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body = await body_of(receive)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if isinstance(request, dict) and isinstance(request.get("method"), str):
            METHODS[request["method"]] += 1
        if isinstance(request, dict) and request.get("method") in refused:
            error = {"code": -32601, "message": "Method not found"}
            payload = json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "error": error}).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
            return
        await app(scope, replaying(body, receive), send)

    return asgi


def handshake_only(app: Any) -> Any:
    """``app`` without the 2026-07-28 era: ``server/discover`` is a method it does not know."""
    return inspecting(app, frozenset({"server/discover"}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--transport", default="streamable-http", choices=["streamable-http", "sse"])
    parser.add_argument("--name", default="federation-upstream")
    parser.add_argument("--handshake-only", action="store_true")
    parser.add_argument("--resource", action="append", default=[], help="Also list a resource at this URI.")
    parser.add_argument("--no-listen", action="store_true")
    parser.add_argument("--flood", action="store_true")
    parser.add_argument("--list-cache", help="TTL_MS:SCOPE, the cache hints of its list results (2026-07-28).")
    parser.add_argument("--slow-get-stream", type=int, default=0, metavar="MS")
    options = parser.parse_args()
    list_cache = None
    if options.list_cache:
        ttl_ms, scope = options.list_cache.split(":")
        list_cache = CacheHint(ttl_ms=int(ttl_ms), scope=scope)
    server = build(options.name, CountingBus(flood=options.flood), options.resource, list_cache)
    app = server.sse_app() if options.transport == "sse" else server.streamable_http_app()
    app = announcing_get_streams(app)
    if options.slow_get_stream:
        app = slow_get_streams(app, options.slow_get_stream)
    refused = set()
    if options.handshake_only:
        refused.add("server/discover")
    if options.no_listen:
        refused.add("subscriptions/listen")
    app = inspecting(app, frozenset(refused))
    config = uvicorn.Config(
        recording(app),
        host="127.0.0.1",
        port=options.port,
        log_level="warning",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
