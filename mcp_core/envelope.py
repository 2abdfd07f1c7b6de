"""The 2026-07-28 per-request envelope: which era a request belongs to, the ``_meta`` it must carry, and the
fields every stateless result carries back (``resultType``, ``_meta`` serverInfo).

The checks run in the order the spec's errors need: missing required fields (-32602), then the mirrored
headers (-32020), then the version (-32022). All of them answer HTTP 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from mcp_core.context import LOG_LEVELS
from mcp_core.errors import InvalidParams, UnsupportedProtocolVersion
from mcp_core.standard_headers import check_standard_headers
from mcp_core.versions import HANDSHAKE_VERSIONS, STATELESS_VERSIONS

JSONObject = dict[str, Any]

PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"

# Every version this server speaks, newest first: what server/discover and -32022 advertise.
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = (*STATELESS_VERSIONS, *reversed(HANDSHAKE_VERSIONS))


@dataclass(frozen=True)
class Envelope:
    """What one stateless request says about itself in ``params._meta``."""

    version: str
    client_capabilities: JSONObject
    client_info: JSONObject | None = None
    log_level: str | None = None
    meta: JSONObject = field(default_factory=dict)


def _meta_of(params: JSONObject | None) -> JSONObject | None:
    meta = (params or {}).get("_meta")
    return meta if isinstance(meta, dict) else None


def is_stateless(*, method: str, params: JSONObject | None, has_session: bool, protocol_header: str | None) -> bool:
    """Pick the era of one request that arrived without being part of a batch.

    A request naming its version in ``_meta`` is stateless (a stray ``Mcp-Session-Id`` is ignored). Otherwise a
    session, an ``initialize``, or an ``MCP-Protocol-Version`` header naming a handshake revision means the
    handshake era; anything else is a stateless request that will be judged by the envelope rules.
    """
    meta = _meta_of(params)
    if meta is not None and PROTOCOL_VERSION_KEY in meta:
        return True
    if has_session or method == "initialize":
        return False
    return (protocol_header or "").strip(" \t") not in HANDSHAKE_VERSIONS


def open_envelope(*, method: str, params: JSONObject | None, headers: Mapping[str, str]) -> Envelope:
    """Validate a stateless request's ``_meta`` and mirrored headers and return its envelope.

    Raises InvalidParams (400) for missing or malformed required fields or an unknown log level, HeaderMismatch
    (400) for headers that disagree with the body, UnsupportedProtocolVersion (400) for a version not served
    statelessly.
    """
    meta = _meta_of(params)
    if meta is None:
        raise InvalidParams("params._meta is required", http_status=400)
    version = meta.get(PROTOCOL_VERSION_KEY)
    if not isinstance(version, str) or not version:
        raise InvalidParams(f"_meta[{PROTOCOL_VERSION_KEY!r}] is required", http_status=400)
    capabilities = meta.get(CLIENT_CAPABILITIES_KEY)
    if not isinstance(capabilities, dict):
        raise InvalidParams(f"_meta[{CLIENT_CAPABILITIES_KEY!r}] is required (an object)", http_status=400)
    client_info = meta.get(CLIENT_INFO_KEY)
    if client_info is not None and not isinstance(client_info, dict):
        raise InvalidParams(f"_meta[{CLIENT_INFO_KEY!r}] must be an object", http_status=400)
    log_level = meta.get(LOG_LEVEL_KEY)
    if log_level is not None and log_level not in LOG_LEVELS:
        raise InvalidParams(f"_meta[{LOG_LEVEL_KEY!r}] must be one of {', '.join(LOG_LEVELS)}", http_status=400)
    check_standard_headers(method=method, params=params or {}, headers=headers, version=version)
    if version not in STATELESS_VERSIONS:
        raise UnsupportedProtocolVersion(
            "Unsupported protocol version",
            data={"supported": list(SUPPORTED_VERSIONS), "requested": version},
        )
    return Envelope(
        version=version,
        client_capabilities=capabilities,
        client_info=client_info,
        log_level=log_level,
        meta=meta,
    )


def complete_result(result: JSONObject, server_info: JSONObject) -> JSONObject:
    """A handler's result as the stateless era sends it: ``resultType`` (``complete`` unless the handler chose)
    and the server's identity in ``_meta``, next to whatever ``_meta`` the handler put there."""
    meta = result.get("_meta")
    merged_meta = {SERVER_INFO_KEY: server_info, **(meta if isinstance(meta, dict) else {})}
    return {"resultType": "complete", **result, "_meta": merged_meta}
