"""Channel-layer group names. Every name is scoped by tenant and hashed to fit the layer's 100-char limit."""

from __future__ import annotations

import hashlib


def _digest(*parts: object) -> str:
    raw = "\x1f".join(str(p) for p in parts).encode()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def server_request_group(tenant_id: int, session_id: str, server_request_id: str) -> str:
    """The client's answer to one server-to-client request."""
    return f"mcp.srq.{tenant_id}.{_digest(session_id, server_request_id)}"


def session_group(tenant_id: int, session_id: str) -> str:
    """Messages for a session's long-lived stream (HTTP+SSE transport, session end)."""
    return f"mcp.ses.{tenant_id}.{_digest(session_id)}"


def stream_group(tenant_id: int, session_id: str, stream_id: str) -> str:
    """Live events of one SSE stream, for a client that resumed it on another connection."""
    return f"mcp.stm.{tenant_id}.{_digest(session_id, stream_id)}"


def task_group(tenant_id: int, task_id: str) -> str:
    """News of one task for whoever waits on it: status changes and the running call's messages."""
    return f"mcp.tsk.{tenant_id}.{_digest(task_id)}"


def task_control_group(tenant_id: int, task_id: str) -> str:
    """Signals for the worker running one task (cancellation)."""
    return f"mcp.tkc.{tenant_id}.{_digest(task_id)}"


def console_group(tenant_id: int, user_id: int, run_id: str, purpose: str) -> str:
    """Signals for one admin's console run (``purpose``: the page's answers, or its cancel button)."""
    return f"mcp.con.{tenant_id}.{_digest(user_id, run_id, purpose)}"
