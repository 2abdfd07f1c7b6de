"""The handshake-era session state machine. Everything that affects session state transitions lives here.

The shell stores the state durably and asks this table what an incoming event does to it.
"""

from __future__ import annotations

from enum import StrEnum


class SessionState(StrEnum):
    # Created by a 2024-11-05 SSE connection, waiting for its initialize request.
    NEW = "new"
    # initialize answered; the client has not yet said notifications/initialized.
    INITIALIZING = "initializing"
    READY = "ready"
    CLOSED = "closed"


class SessionEvent(StrEnum):
    INITIALIZE = "initialize"
    INITIALIZED = "initialized"
    REQUEST = "request"
    CLOSE = "close"


class SessionStateError(Exception):
    """An event the session's state does not allow."""


# (state, event) -> next state. Pairs absent from the table are protocol violations.
TRANSITIONS: dict[tuple[SessionState, SessionEvent], SessionState] = {
    (SessionState.NEW, SessionEvent.INITIALIZE): SessionState.INITIALIZING,
    (SessionState.NEW, SessionEvent.CLOSE): SessionState.CLOSED,
    (SessionState.INITIALIZING, SessionEvent.INITIALIZED): SessionState.READY,
    # Clients may pipeline requests before their initialized notification arrives.
    (SessionState.INITIALIZING, SessionEvent.REQUEST): SessionState.INITIALIZING,
    (SessionState.INITIALIZING, SessionEvent.CLOSE): SessionState.CLOSED,
    (SessionState.READY, SessionEvent.REQUEST): SessionState.READY,
    # A repeated initialized notification changes nothing.
    (SessionState.READY, SessionEvent.INITIALIZED): SessionState.READY,
    (SessionState.READY, SessionEvent.CLOSE): SessionState.CLOSED,
}


def next_state(state: SessionState, event: SessionEvent) -> SessionState:
    """The state after ``event``. Raises SessionStateError when the event is not allowed in ``state``."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise SessionStateError(f"{event.value} is not allowed in session state {state.value}") from None
