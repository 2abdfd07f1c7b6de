"""Domain errors of the protocol and the one boundary that maps any exception to the wire.

Handlers raise these; ``error_to_wire`` turns any exception into a JSON-RPC error object and an HTTP status.
"""

from __future__ import annotations

import math
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
URL_ELICITATION_REQUIRED = -32042
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
# Transport-level rejections carried in a JSON-RPC error body (no standard code exists for them).
SERVER_ERROR = -32000
# A rate limit refused the request (implementation-defined, in JSON-RPC's server-error range -32000..-32099; the
# HTTP status 429 and ``Retry-After`` say the same to clients that read only HTTP).
RATE_LIMITED = -32029


class McpError(Exception):
    """An error the peer should see as a JSON-RPC error object."""

    code: int = INTERNAL_ERROR
    http_status: int = 200

    def __init__(self, message: str, *, data: Any = None, http_status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data
        if http_status is not None:
            self.http_status = http_status


class ParseError(McpError):
    code = PARSE_ERROR
    http_status = 400


class InvalidRequest(McpError):
    code = INVALID_REQUEST
    http_status = 400


class MethodNotFound(McpError):
    code = METHOD_NOT_FOUND


class InvalidParams(McpError):
    code = INVALID_PARAMS


class InternalError(McpError):
    code = INTERNAL_ERROR
    http_status = 500


class ResourceNotFound(McpError):
    code = RESOURCE_NOT_FOUND


class UrlElicitationRequired(McpError):
    """2025-11-25: the request can go on only after the person visits the pages in ``data.elicitations`` (URL-mode
    ``elicitation/create`` params); the client retries it then (``URLElicitationRequiredError``)."""

    code = URL_ELICITATION_REQUIRED


class UnsupportedProtocolVersion(McpError):
    code = UNSUPPORTED_PROTOCOL_VERSION
    http_status = 400


class HeaderMismatch(McpError):
    """2026-07-28: a mirrored HTTP header is missing, malformed, or disagrees with the body."""

    code = HEADER_MISMATCH
    http_status = 400


class MissingClientCapability(McpError):
    """2026-07-28: the request needs a capability the client did not declare in its ``_meta``."""

    code = MISSING_CLIENT_CAPABILITY
    http_status = 400


class TransportError(McpError):
    """A request the transport refuses (bad headers, unknown session): JSON-RPC body, non-200 status."""

    code = SERVER_ERROR
    http_status = 400


class RateLimited(McpError):
    """A rate limit refused the request: HTTP 429 with ``Retry-After``; ``limit`` names the limit that refused
    ("tenant", "client", "tool" or "ceiling"), ``retry_after`` the seconds until it would admit the request."""

    code = RATE_LIMITED
    http_status = 429

    def __init__(self, message: str, *, retry_after: float, limit: str) -> None:
        super().__init__(message, data={"limit": limit, "retryAfter": retry_after_seconds(retry_after)})
        self.retry_after = retry_after
        self.limit = limit


class ServiceUnavailable(McpError):
    """The server cannot answer for a moment (its database cannot be reached): HTTP 503 with ``Retry-After``, and
    -32603 in the body, since JSON-RPC has no code of its own for it."""

    code = INTERNAL_ERROR
    http_status = 503

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message, data={"retryAfter": retry_after_seconds(retry_after)})
        self.retry_after = retry_after


def retry_after_seconds(delay: float) -> int:
    """A delay as ``Retry-After`` gives it: whole seconds, rounded up, at least 1."""
    return max(1, math.ceil(delay))


class ClientRequestFailed(Exception):
    """The client answered a server-to-client request with an error, or could not be asked."""

    def __init__(self, message: str, *, code: int = INTERNAL_ERROR, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class ToolError(Exception):
    """Raised by tool code: becomes a ``tools/call`` result with ``isError: true``, not a protocol error."""


class PromptError(McpError):
    """Raised by prompt code that cannot render: ``prompts/get`` has no error result, so the client gets a
    JSON-RPC error (-32603) carrying the message."""

    code = INTERNAL_ERROR


def error_to_wire(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """Map any exception to ``(http_status, error_object)``; unknown exceptions become -32603 with no detail."""
    if isinstance(exc, McpError):
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return exc.http_status, error
    return 500, {"code": INTERNAL_ERROR, "message": "Internal error"}
