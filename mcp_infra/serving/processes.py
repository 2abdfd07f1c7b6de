"""Child processes that end with their parent: Linux's parent-death signal, asked for by each child as it starts.

A supervisor killed with SIGKILL cannot stop its children; the kernel can. Both the ``serve --workers N`` server
processes and the beat process ``celery worker --beat`` forks ask for it, so no way of stopping the parent leaves
a child serving (or scheduling periodic tasks a second time) under init.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
from typing import Any

logger = logging.getLogger(__name__)

# <linux/prctl.h>
PR_SET_PDEATHSIG = 1


def end_with_parent(parent_pid: int, signum: int = signal.SIGTERM) -> None:
    """Have the kernel send ``signum`` to this process when its parent dies; exit at once if it already has.

    ``parent_pid`` is the parent's pid as the parent knew it, so a parent that died before the request was made
    (this process already reparented) is noticed too. Elsewhere than Linux only that check is made.

    Raises ``OSError`` when the kernel refuses the request.
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"prctl(PR_SET_PDEATHSIG): {os.strerror(errno)}")
    if os.getppid() != parent_pid:
        logger.warning("Parent process %s is gone: exiting", parent_pid)
        os._exit(1)


def exit_normally_on_sigterm() -> None:
    """Make SIGTERM end this process with ``SystemExit`` (status 143) instead of the default sudden death, so
    ``atexit`` handlers run: the activity log writes the records it still buffers.

    ASGI servers install their own handlers while they serve and put this one back when they stop: uvicorn then
    raises the signal again, which lands here after its graceful shutdown; daphne and granian return normally.
    """

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def beat_ends_with_worker(sender: Any = None, **kwargs: Any) -> None:
    """Celery's ``beat_embedded_init`` receiver: the beat process ``celery worker --beat`` forks ends with it.

    Celery runs that beat as a child process; a worker killed with SIGKILL would otherwise leave it scheduling
    periodic tasks next to the beat of the worker that replaces it.
    """
    from billiard.process import current_process

    # Set in the worker before the fork; None in a process that was not started as a child (``celery beat``).
    parent_pid = getattr(current_process(), "_parent_pid", None)
    if isinstance(parent_pid, int):
        end_with_parent(parent_pid)
