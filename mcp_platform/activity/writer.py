"""The per-process buffer between the request path and the activity table.

Calls append to a bounded in-memory buffer (a full buffer drops the record and counts it: a request never waits
for the log). A daemon thread hands the buffer to its sink (``activity_calls_write``) every
``ACTIVITY_FLUSH_SECONDS`` or as soon as ``ACTIVITY_BATCH`` records wait, and the process's exit (``atexit``:
servers stop on SIGTERM and return normally) writes what is left.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


class BufferedWriter(Generic[T]):
    """Collects items from any thread or task and hands them to ``sink`` in batches, off the caller's path.

    ``add`` takes no lock: ``deque.append`` and ``popleft`` are atomic, and the capacity check may let a few items
    past the bound when threads race (a bound on memory, not an exact count)."""

    def __init__(
        self,
        *,
        sink: Callable[[list[T]], None],
        capacity: int,
        batch: int,
        interval: float,
        name: str,
        threaded: bool = True,
    ) -> None:
        """``threaded=False``: no writer thread, the owner calls ``flush`` (tests, one-shot commands)."""
        self._sink = sink
        self._capacity = capacity
        self._batch = batch
        self._interval = interval
        self._name = name
        # Held while a batch is written, so close() returns only after an in-flight batch is stored too.
        self._writing = threading.Lock()
        self._buffer: deque[T] = deque()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._threaded = threaded
        self._started = False
        self.dropped = 0
        self.written = 0
        self._dropped_reported = 0
        os.register_at_fork(after_in_child=self._forked)

    def add(self, item: T) -> bool:
        """Buffer ``item``; False (and counted) when the buffer is full. Never blocks."""
        if not self._started:
            self._start()
        buffer = self._buffer
        if len(buffer) >= self._capacity:
            self.dropped += 1
            return False
        buffer.append(item)
        if len(buffer) == self._batch:
            self._wake.set()
        return True

    def pending(self) -> int:
        return len(self._buffer)

    def discard(self) -> int:
        """Forget what is buffered (a test's records, whose database is gone); the number forgotten."""
        return len(self._take())

    def _take(self) -> list[T]:
        buffer = self._buffer
        return [buffer.popleft() for _ in range(len(buffer))]

    def flush(self) -> int:
        """Write everything buffered now, in batches; the number written. A batch the sink fails on is logged and
        dropped (counted): retrying it forever would hold the buffer full."""
        with self._writing:
            items = self._take()
            written = 0
            for start in range(0, len(items), self._batch):
                chunk = items[start : start + self._batch]
                try:
                    self._sink(chunk)
                    written += len(chunk)
                except Exception:
                    logger.exception("%s: could not write %d records", self._name, len(chunk))
                    self.dropped += len(chunk)
            self.written += written
        self._report_drops()
        return written

    def close(self) -> None:
        """Stop the thread and write what is left (the process is ending)."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread() and thread.is_alive():
            thread.join(timeout=max(5.0, self._interval * 5))
        self.flush()

    def _start(self) -> None:
        """Start this process's writer thread (if it has one), once; what is left is written at exit."""
        with self._writing:
            if self._started:
                return
            self._started = True
            if self._threaded:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        atexit.register(self.close)

    def _forked(self) -> None:
        """In a forked child: no thread survived the fork, and the parent writes the records it buffered."""
        self._buffer = deque()
        self._writing = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        if self._thread is not None:
            self._thread = None
            self._started = False

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            self.flush()

    def _report_drops(self) -> None:
        newly = self.dropped - self._dropped_reported
        self._dropped_reported = self.dropped
        if newly:
            logger.warning(
                "%s: buffer full or write failed, %d records dropped (%d in all)", self._name, newly, self.dropped
            )
