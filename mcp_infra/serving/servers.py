"""The ASGI servers ``manage.py serve`` can run the platform on (uvicorn, daphne, granian), one function each.

Every runner serves the already-imported application from the current process, with the collector frozen
after start-up and no access log (the health probes stay out of it when asked for one); ``docs/performance.md``
says which server to pick and why. On each, the first SIGTERM or SIGINT drains the process before the server stops
(``mcp_infra.serving.drain``), and a second one stops it at once.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import socket
from collections.abc import Callable
from typing import Any

from mcp_infra.serving.drain import drain_then, process_drain
from mcp_infra.serving.probes import ProbeLinesFilter, is_probe

# Called once with the server's event loop before it serves (``manage.py serve`` binds the embedded worker to it).
OnLoop = Callable[[asyncio.AbstractEventLoop], None] | None

SERVERS = ("uvicorn", "daphne", "granian")
DEFAULT_SERVER = "uvicorn"
# What a server stopped without a drain (a second signal) gives the responses still running before it closes them.
GRACEFUL_SHUTDOWN_SECONDS = 5
GRANIAN_MAX_CONCURRENT_REQUESTS = 65536
# The signals that drain a server process (``serve`` turns SIGHUP and SIGQUIT into SIGTERM for its children).
DRAIN_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def quiet_probes(logger_name: str) -> None:
    """Show the access lines of ``logger_name`` (servers log them at INFO; the platform's root logs WARNING and up),
    the probes' excepted."""
    access = logging.getLogger(logger_name)
    access.setLevel(logging.INFO)
    access.addFilter(ProbeLinesFilter())


def freeze_start_up_heap() -> None:
    """Everything imported so far lives for the whole process: keep the collector from walking it again.

    Tail latency of Python servers is mostly the collector traversing the import-time heap.
    """
    gc.collect()
    gc.freeze()


def share_database_handle() -> None:
    """Called on the running loop, in the context every request task is copied from.

    Django keeps database handles per context on an event loop's thread: a task that builds a query creates its
    own unless its context already holds one (3 KB per open stream). No connection is opened here.
    """
    from django.db import DEFAULT_DB_ALIAS, connections

    connections[DEFAULT_DB_ALIAS].ops  # noqa: B018


def prepare_serving_loop(on_loop: OnLoop) -> None:
    """On the running loop, just before an asyncio server serves: hand the loop on, share the database handle,
    freeze the start-up heap."""
    if on_loop is not None:
        on_loop(asyncio.get_running_loop())
    share_database_handle()
    freeze_start_up_heap()


def listening_socket(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """A bound, listening, inheritable socket that several worker processes accept on."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


def request_limits() -> tuple[float, int]:
    """The header timeout (seconds) and the header size limit (bytes) of ``MCP_PLATFORM``."""
    from mcp_infra.conf import platform_settings

    return float(platform_settings.HEADER_TIMEOUT), int(platform_settings.MAX_HEADER_BYTES)


def run_uvicorn(
    application: Any, *, host: str, port: int, fd: int | None, access_log: bool, on_loop: OnLoop = None
) -> None:
    """uvicorn with uvloop and httptools, the latter bounded in header time and size
    (``mcp_infra.serving.uvicorn_protocol``); lifespan off (Channels' router has no lifespan handler)."""
    import uvicorn
    import uvloop

    from mcp_infra.serving.uvicorn_protocol import bounded_protocol
    from mcp_infra.serving.uvicorn_server import DrainingServer

    header_timeout, max_header_bytes = request_limits()
    config = uvicorn.Config(
        application,
        host=host,
        port=port,
        loop="uvloop",
        # A memory bound, twice the exact limit the ASGI middleware applies (it counts no request line or CRLF).
        http=bounded_protocol(header_timeout=header_timeout, max_header_bytes=2 * max_header_bytes),
        ws="none",
        lifespan="off",
        # As daphne: X-Forwarded-* are not trusted (MCP_PUBLIC_BASE_URL names the public origin behind a proxy),
        # and the proxy-headers middleware costs a scope copy per request.
        proxy_headers=False,
        access_log=access_log,
        log_config=None,
        log_level="warning",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    if access_log:
        quiet_probes("uvicorn.access")
    server = DrainingServer(config)
    sockets = [socket.socket(fileno=fd)] if fd is not None else None

    async def serve() -> None:
        prepare_serving_loop(on_loop)
        await server.serve(sockets=sockets)

    uvloop.run(serve())


def run_daphne(
    application: Any, *, host: str, port: int, fd: int | None, access_log: bool, on_loop: OnLoop = None
) -> None:
    """daphne on a uvloop loop: importing ``daphne.server`` installs Twisted's asyncio reactor on a new loop of
    the policy in force, so the policy is set first (9% less CPU per request than the default selector loop).

    Twisted's channel is bounded by ``mcp_infra.serving.daphne_channel``: a whole request (headers and body) within
    the header and body timeouts together, headers refused by Twisted (400) beyond twice the header limit; an idle
    connection closes after the header timeout."""
    import sys

    import uvloop

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    from daphne.access import AccessLogGenerator
    from daphne.endpoints import build_endpoint_description_strings
    from daphne.server import Server, twisted_loop
    from twisted.internet import reactor

    from mcp_infra.conf import platform_settings
    from mcp_infra.serving.daphne_channel import channel_factory

    header_timeout, max_header_bytes = request_limits()
    request_deadline = header_timeout + float(platform_settings.BODY_TIMEOUT)

    if on_loop is not None:
        on_loop(twisted_loop)

    if fd is not None:
        endpoints = build_endpoint_description_strings(file_descriptor=fd)
    else:
        endpoints = build_endpoint_description_strings(host=host, port=port)
    freeze_start_up_heap()

    class ProbeQuietAccessLog(AccessLogGenerator):  # type: ignore[misc]
        def __call__(self, protocol: str, action: str, details: dict[str, Any]) -> None:
            if not (protocol == "http" and is_probe(str(details.get("path", "")))):
                super().__call__(protocol, action, details)

    server = Server(
        application=application,
        endpoints=endpoints,
        # The drain's own (below): Twisted's would stop the reactor at once, cancelling every request.
        signal_handlers=False,
        http_timeout=None,
        application_close_timeout=60,
        action_logger=ProbeQuietAccessLog(sys.stdout) if access_log else None,
    )

    async def stop_when_idle() -> None:
        """Stop the reactor once no request is running (or at the drain's deadline): daphne cancels every
        application still running when the reactor stops. Polled: daphne tells nobody when an application ends."""
        while process_drain.remaining() > 0 and any(  # noqa: ASYNC110
            not details["application_instance"].done()
            for details in server.connections.values()
            if details.get("application_instance") is not None
        ):
            await asyncio.sleep(0.1)
        server.stop()

    def on_signal(signum: int, frame: Any) -> None:
        if not drain_then(stop_when_idle, twisted_loop):
            twisted_loop.call_soon_threadsafe(server.stop)

    for signum in DRAIN_SIGNALS:
        signal.signal(signum, on_signal)

    def bound_connections() -> None:
        # The factory exists once ``run`` starts, before the reactor accepts the first connection.
        server.http_factory.timeOut = header_timeout
        server.http_factory.protocol = channel_factory(
            request_deadline=request_deadline, max_header_bytes=max_header_bytes
        )

    reactor.callWhenRunning(bound_connections)
    server.run()


def run_granian(
    application: Any, *, host: str, port: int, fd: int | None, access_log: bool, on_loop: OnLoop = None
) -> None:
    """granian's embedded server on this process's uvloop loop (so the embedded Celery worker still applies).

    ``asginl``: ASGI without lifespan. Raises ``ValueError`` for ``fd``: granian binds its own socket.
    """
    if fd is not None:
        raise ValueError("granian binds its own socket: run one granian process per port")
    import uvloop
    from granian.constants import HTTPModes, Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LogLevels
    from granian.server.embed import Server

    header_timeout, max_header_bytes = request_limits()

    server = Server(
        application,
        address=host,
        port=port,
        interface=Interfaces.ASGINL,
        # HTTP/1.1 only: in ``auto`` mode granian waits for a connection's first bytes (to tell HTTP/2 apart)
        # with no timeout, so connections that send nothing are held for ever.
        http=HTTPModes.http1,
        backlog=2048,
        # granian's default admits only ``backlog`` concurrent requests; every open SSE stream is one.
        backpressure=GRANIAN_MAX_CONCURRENT_REQUESTS,
        # Headers within the header timeout (408 after), and at most twice the header limit buffered (431).
        http1_settings=HTTP1Settings(
            header_read_timeout=int(header_timeout * 1000), max_buffer_size=max(2 * max_header_bytes, 8192)
        ),
        log_level=LogLevels.warning,
        log_access=access_log,
    )
    if access_log:
        quiet_probes("granian.access")

    async def serve() -> None:
        prepare_serving_loop(on_loop)
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            if not drain_then(server.stop, loop):
                server.stop()

        for signum in DRAIN_SIGNALS:
            loop.add_signal_handler(signum, on_signal)
        await server.serve()

    uvloop.run(serve())


RUNNERS = {"uvicorn": run_uvicorn, "daphne": run_daphne, "granian": run_granian}
