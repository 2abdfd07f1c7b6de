"""What a request handler may use: the negotiated facts of the request and the shell's seams."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp_core.caching import CacheHints
from mcp_core.catalog import Catalog
from mcp_core.context import Outbound, RequestContext
from mcp_core.mrtr import InputLedger, InputPolicy
from mcp_core.tasks import TaskStore
from mcp_core.versions import STATELESS_VERSIONS

JSONObject = dict[str, Any]


class SessionHooks(Protocol):
    """Session state a handshake-era request may change; the shell stores it durably."""

    async def set_log_level(self, level: str) -> None: ...

    async def subscribe(self, uri: str) -> None: ...

    async def unsubscribe(self, uri: str) -> None: ...


# Immutable, so one instance serves as every Env's default.
NO_HINTS = CacheHints()


@dataclass(frozen=True)
class ServerIdentity:
    name: str
    version: str
    title: str | None = None
    instructions: str | None = None


@dataclass
class Env:
    """Everything one request's handler sees. Built by the shell per request."""

    version: str
    catalog: Catalog
    outbound: Outbound
    server: ServerIdentity
    client_capabilities: JSONObject = field(default_factory=dict)
    log_level: str | None = None
    page_size: int = 50
    session: SessionHooks | None = None
    meta: JSONObject = field(default_factory=dict)
    # Stateless era only: the hints cacheable results carry, and the request's HTTP headers (lower-cased
    # names) for the rules that compare headers with the body; None where the transport has no headers.
    cache: CacheHints = NO_HINTS
    headers: Mapping[str, str] | None = None
    # Stateless era: how questions to the client become input_required results (None: they cannot be asked),
    # and, set by the dispatcher for the request it runs, the answers its retry brought.
    input_policy: InputPolicy | None = None
    ledger: InputLedger | None = None
    # The caller's tasks where the server offers them (both eras); None: calls always run in the request.
    tasks: TaskStore | None = None
    # Whom the request acts for, as the shell knows it (a person through a client, a machine client, the console):
    # opaque to the protocol, handed to tools and backends through their context.
    caller: object | None = None

    @property
    def stateless(self) -> bool:
        return self.version in STATELESS_VERSIONS

    def request_context(self, arguments: JSONObject, *, may_continue_as_task: bool = False) -> RequestContext:
        """The ``ToolContext`` a tool or resource backend runs with for this request."""
        return RequestContext(
            outbound=self.outbound,
            client_capabilities=self.client_capabilities,
            arguments=arguments,
            progress_token=self.progress_token,
            log_level=self.log_level,
            stateless=self.stateless,
            ledger=self.ledger,
            may_continue_as_task=may_continue_as_task,
            caller=self.caller,
        )

    @property
    def progress_token(self) -> str | int | None:
        token = self.meta.get("progressToken")
        return token if isinstance(token, (str, int)) and not isinstance(token, bool) else None
