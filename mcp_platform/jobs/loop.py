"""The one event loop per process on which Celery tasks run their async work (tool calls).

One loop per process means one channel-layer connection set and one process mailbox, as on the web side,
instead of new ones per task. Embedded (``manage.py serve``) it is the web server's own loop, so the in-memory
channel layer carries the worker's signals to the web side; a separate worker starts a daemon thread for it on
first use. Celery's threads block on their task's coroutine until it ends, so ``acks_late`` still means
"acknowledged once the work is done".
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def use_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Run this process's async work on ``loop`` (the web server's loop in embedded mode)."""
    global _loop
    with _lock:
        _loop = loop


def _start_own_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="jobs-event-loop", daemon=True)
    thread.start()
    return loop


def process_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = _start_own_loop()
        return _loop


def run_on_process_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on the process loop from a worker thread and wait for its outcome (or exception)."""
    return asyncio.run_coroutine_threadsafe(coroutine, process_loop()).result()
