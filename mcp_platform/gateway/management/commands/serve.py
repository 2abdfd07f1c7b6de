"""``manage.py serve``: everything the platform needs on this machine in one process tree.

Applies migrations, starts the ASGI server (daphne) and, on embedded defaults, a Celery worker inside
the same process (memory broker), so long jobs are still real Celery jobs. The worker runs their async work on
the web server's event loop, where the in-memory channel layer lives.
"""

from __future__ import annotations

import gc
import logging
import threading
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

logger = logging.getLogger(__name__)


# Worker threads mostly wait on their task's coroutine (on the shared event loop), so they are cheap.
EMBEDDED_WORKER_THREADS = 16


def start_embedded_worker() -> threading.Thread:
    """A Celery worker consuming the in-memory broker from a daemon thread of this process; its tasks' async work
    runs on the web server's loop (``mcp_platform.jobs.loop``)."""
    from daphne.server import twisted_loop

    from mcp_platform.celery import app
    from mcp_platform.jobs.loop import use_loop

    use_loop(twisted_loop)
    worker = app.WorkController(
        app=app,
        pool_cls="threads",
        concurrency=EMBEDDED_WORKER_THREADS,
        loglevel="WARNING",
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        # The periodic purges (sessions, expired tool runs) run here too.
        beat=True,
        schedule_filename=str(settings.VAR_DIR / "celerybeat-schedule"),
    )
    thread = threading.Thread(target=worker.start, name="celery-embedded-worker", daemon=True)
    thread.start()
    return thread


class Command(BaseCommand):
    help = "Run the platform: ASGI server, and on embedded defaults an in-process Celery worker."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-migrate", action="store_true", help="Do not apply migrations first.")
        parser.add_argument(
            "--no-worker", action="store_true", help="Do not start the embedded Celery worker (production)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["no_migrate"]:
            call_command("migrate", interactive=False, verbosity=0)
        if settings.CELERY_EMBEDDED_WORKER and not options["no_worker"]:
            start_embedded_worker()
            self.stdout.write("Embedded Celery worker started (memory broker).")

        from channels.routing import get_default_application
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server

        application = get_default_application()
        endpoints = build_endpoint_description_strings(host=options["host"], port=options["port"])
        self.stdout.write(f"Serving MCP on http://{options['host']}:{options['port']}/t/<tenant>/mcp")
        self.stdout.flush()
        # Everything imported so far lives for the whole process: keep the collector from walking it.
        gc.collect()
        gc.freeze()
        Server(
            application=application,
            endpoints=endpoints,
            signal_handlers=True,
            http_timeout=None,
            application_close_timeout=60,
        ).run()
