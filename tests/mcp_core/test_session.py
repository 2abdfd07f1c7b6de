"""The handshake-era session state table."""

import pytest

from mcp_core.session import SessionEvent, SessionState, SessionStateError, next_state


def test_a_session_becomes_ready_after_initialize_and_initialized():
    state = next_state(SessionState.NEW, SessionEvent.INITIALIZE)
    assert state is SessionState.INITIALIZING
    assert next_state(state, SessionEvent.REQUEST) is SessionState.INITIALIZING
    assert next_state(state, SessionEvent.INITIALIZED) is SessionState.READY


def test_initialize_twice_is_refused():
    with pytest.raises(SessionStateError):
        next_state(SessionState.READY, SessionEvent.INITIALIZE)


def test_a_closed_session_accepts_nothing():
    for event in SessionEvent:
        with pytest.raises(SessionStateError):
            next_state(SessionState.CLOSED, event)


def test_requests_before_initialize_are_refused():
    with pytest.raises(SessionStateError):
        next_state(SessionState.NEW, SessionEvent.REQUEST)
