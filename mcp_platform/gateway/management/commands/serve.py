"""``manage.py serve``: everything the platform needs on this machine in one process tree.

Applies migrations, starts the ASGI server (uvicorn by default; daphne or granian on request) and, on
embedded defaults, a Celery worker inside the same process (memory broker), so long jobs are still real
Celery jobs; the worker runs their async work on the web server's event loop, where the in-memory channel layer
lives. ``--workers N`` runs N server processes on one socket (production topology only).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from mcp_infra.conf import platform_settings
from mcp_infra.serving.drain import CUT_OFF_SECONDS
from mcp_infra.serving.processes import end_with_parent, exit_normally_on_sigterm
from mcp_infra.serving.servers import DEFAULT_SERVER, RUNNERS, SERVERS, listening_socket

logger = logging.getLogger(__name__)


# Worker threads mostly wait on their task's coroutine (on the shared event loop), so they are cheap.
EMBEDDED_WORKER_THREADS = 16
# Every signal that asks ``serve --workers N`` to stop; each drains and ends all its server processes.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
# What a server process may take beyond its drain (the server's own shutdown, the exit) before it is killed.
STOP_MARGIN_SECONDS = 5.0


def child_stop_seconds() -> float:
    """How long a server process may take from SIGTERM to its exit before the supervisor kills it."""
    return float(platform_settings.DRAIN_SECONDS) + CUT_OFF_SECONDS + STOP_MARGIN_SECONDS


def start_embedded_worker() -> threading.Thread:
    """A Celery worker consuming the in-memory broker from a daemon thread of this process; its tasks' async work
    runs on the web server's loop (``mcp_platform.jobs.loop``), which the server hands to ``use_loop`` as it starts.

    Beat (the periodic purges of sessions and expired tool runs) runs in a thread here too, not in the child
    process the worker would fork for it: a process of its own outlives a ``serve`` stopped by a signal.
    """
    from celery.beat import EmbeddedService

    from mcp_platform.celery import app

    worker = app.WorkController(
        app=app,
        pool_cls="threads",
        concurrency=EMBEDDED_WORKER_THREADS,
        loglevel="WARNING",
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
    )
    thread = threading.Thread(target=worker.start, name="celery-embedded-worker", daemon=True)
    thread.start()
    EmbeddedService(app, thread=True).start()  # its schedule file: CELERY_BEAT_SCHEDULE_FILENAME
    return thread


def multi_process_refusal(*, server: str, embedded_worker: bool, redis_url: str, database_engine: str) -> str | None:
    """Why this configuration cannot run several web processes, or None when it can.

    The in-memory channel layer and the embedded worker's memory broker exist in one process only, SQLite takes
    one writer at a time, and granian binds its own socket.
    """
    if embedded_worker or not redis_url:
        return "--workers above 1 needs REDIS_URL (the channel layer must reach every process)"
    if database_engine == "django.db.backends.sqlite3":
        return "--workers above 1 needs PostgreSQL (DATABASE_URL)"
    if server == "granian":
        return "--workers above 1 runs uvicorn or daphne; run one granian process per port"
    return None


class Command(BaseCommand):
    help = "Run the platform: ASGI server, and on embedded defaults an in-process Celery worker."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--server",
            choices=SERVERS,
            default=os.environ.get("MCP_SERVER", DEFAULT_SERVER),
            help=f"ASGI server (default {DEFAULT_SERVER}, or MCP_SERVER).",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=int(os.environ.get("MCP_WEB_WORKERS", "1")),
            help="Server processes sharing the port (production topology only; default 1, or MCP_WEB_WORKERS).",
        )
        parser.add_argument("--access-log", action="store_true", help="Log every request (off: it costs CPU).")
        parser.add_argument("--no-migrate", action="store_true", help="Do not apply migrations first.")
        parser.add_argument(
            "--no-worker", action="store_true", help="Do not start the embedded Celery worker (production)."
        )
        # Internal: serve on a socket inherited from the supervising ``serve --workers N``, whose pid follows.
        parser.add_argument("--fd", type=int, default=None, help=argparse.SUPPRESS)
        parser.add_argument("--supervisor", type=int, default=None, help=argparse.SUPPRESS)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["supervisor"] is not None:
            end_with_parent(options["supervisor"])
        workers = options["workers"]
        if workers < 1:
            raise CommandError("--workers must be at least 1")
        if workers > 1:
            refusal = multi_process_refusal(
                server=options["server"],
                embedded_worker=settings.CELERY_EMBEDDED_WORKER,
                redis_url=settings.REDIS_URL,
                database_engine=settings.DATABASES["default"]["ENGINE"],
            )
            if refusal:
                raise CommandError(refusal)
        if not options["no_migrate"]:
            call_command("migrate", interactive=False, verbosity=0)
        where = f"http://{options['host']}:{options['port']}/t/<tenant>/mcp"
        if workers > 1:
            self.stdout.write(f"Serving MCP on {where} ({options['server']}, {workers} processes)")
            self.stdout.flush()
            sys.exit(self._supervise(options))
        from mcp_platform.gateway.background import start_background

        on_loop = start_background
        if settings.CELERY_EMBEDDED_WORKER and not options["no_worker"]:
            from mcp_platform.jobs.loop import use_loop

            start_embedded_worker()

            def on_loop(loop: asyncio.AbstractEventLoop) -> None:
                use_loop(loop)
                start_background(loop)

            self.stdout.write("Embedded Celery worker started (memory broker).")

        from channels.routing import get_default_application

        application = get_default_application()
        if options["fd"] is None:
            self.stdout.write(f"Serving MCP on {where} ({options['server']})")
        self.stdout.flush()
        exit_normally_on_sigterm()
        RUNNERS[options["server"]](
            application,
            host=options["host"],
            port=options["port"],
            fd=options["fd"],
            access_log=options["access_log"],
            on_loop=on_loop,
        )

    def _supervise(self, options: dict[str, Any]) -> int:
        """Run ``workers`` child servers on one inherited socket until a signal or a child's death.

        Any of ``STOP_SIGNALS`` ends every child: each gets SIGTERM and drains (``mcp_infra.serving.drain``), and
        is killed if still running ``child_stop_seconds()`` later; a supervisor killed outright takes its children
        with it, as each asked the kernel for its parent's death signal. A child that dies takes the group down
        (exit status 1): restarting is the process manager's job.
        """
        signalled = False

        def on_signal(signum: int, frame: Any) -> None:
            nonlocal signalled
            signalled = True

        for signum in STOP_SIGNALS:
            signal.signal(signum, on_signal)
        sock = listening_socket(options["host"], options["port"])
        argv = [sys.executable, sys.argv[0], "serve", "--no-migrate", "--no-worker", "--supervisor", str(os.getpid())]
        argv += ["--server", options["server"], "--workers", "1", "--fd", str(sock.fileno())]
        if options["access_log"]:
            argv.append("--access-log")
        children: list[subprocess.Popen[bytes]] = []
        while not signalled and len(children) < options["workers"]:
            children.append(subprocess.Popen(argv, pass_fds=[sock.fileno()]))
        while not signalled and all(child.poll() is None for child in children):
            time.sleep(0.2)
        # The children hold the socket too: they go on accepting while they drain, and close it as they stop. A
        # listening socket left open here would take connections nobody accepts any more.
        sock.close()
        stop_children(children)
        return 0 if signalled else 1


def stop_children(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every running child (each drains), and SIGKILL those still running ``child_stop_seconds()`` later."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + child_stop_seconds()
    for child in children:
        try:
            child.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
