"""What a tool (or a prompt or resource template rendered by code) sees while it runs: progress, logs, and
questions to the client, in either era.

``ToolContext`` is the interface their authors write against. ``RequestContext`` implements it on top of an
``Outbound`` sink that the shell provides, and enforces the protocol's rules on the way out: progress only
with a token and strictly increasing, logs only at or above the client's level, and requests only for
capabilities the client declared. In the stateless era (``stateless=True``) logs need the request's opt-in
level, a capability the client did not declare is the protocol error -32021 instead of a failed tool, and
questions to the client go to the request's ``InputLedger`` (MRTR) rather than over the wire. ``key`` names a
question across retries; by default questions are keyed by call order. ``require_url_visit`` sends the person to a
page in whichever way the era and the client allow (a question, the -32042 error, or a failed tool carrying the link).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from mcp_core.caching import CacheHints, narrowest
from mcp_core.errors import ClientRequestFailed, MissingClientCapability, ToolError, UrlElicitationRequired
from mcp_core.mrtr import InputLedger
from mcp_core.tasks import ContinueAsTask

LOG_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

JSONObject = dict[str, Any]


def capability_declared(capabilities: JSONObject, capability: str, sub: str | None = None) -> bool:
    """Whether ``capabilities`` (a client's) declare ``capability``, and ``sub`` inside it (a false flag declares
    nothing)."""
    declared = capabilities.get(capability)
    if declared is None:
        return False
    return sub is None or (isinstance(declared, dict) and declared.get(sub) not in (None, False))


def url_elicitation(message: str, url: str, elicitation_id: str) -> JSONObject:
    """The params of a URL-mode ``elicitation/create`` (also an entry of -32042's ``data.elicitations``)."""
    return {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}


class ToolContext(Protocol):
    """The calls a Python tool, prompt or resource template may make while it runs."""

    @property
    def arguments(self) -> JSONObject: ...

    @property
    def caller(self) -> object | None:
        """Whom the call acts for, as the shell knows it (opaque to the protocol)."""
        ...

    @property
    def wants_progress(self) -> bool:
        """Whether the client asked for progress (else ``report_progress`` sends nothing)."""
        ...

    @property
    def log_threshold(self) -> str | None:
        """The lowest level ``log`` passes on; ``None`` when it passes none (a 2026-07-28 request without a log
        level)."""
        ...

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Tell the client how far along the work is (ignored when the client asked for no progress)."""
        ...

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message (dropped when below the client's chosen level)."""
        ...

    def client_declares(self, capability: str, sub: str | None = None) -> bool:
        """Whether the client declared ``capability`` (and ``sub`` inside it): ask only what it can answer."""
        ...

    def require(self, capability: str, sub: str | None = None) -> None:
        """Raise what this request's era says of a capability the client did not declare: ``MissingClientCapability``
        (2026-07-28, a protocol error) or ``ClientRequestFailed`` (handshake era, a failed tool)."""
        ...

    async def elicit(self, message: str, requested_schema: JSONObject, *, key: str | None = None) -> JSONObject:
        """Ask the user for structured input; returns ``{action, content?}``. Raises ``ClientRequestFailed``."""
        ...

    async def elicit_url(self, message: str, url: str, elicitation_id: str, *, key: str | None = None) -> JSONObject:
        """Send the user to a URL (URL-mode elicitation); returns ``{action}``. Raises ``ClientRequestFailed``."""
        ...

    async def require_url_visit(self, message: str, url: str, elicitation_id: str, *, key: str | None = None) -> None:
        """Have the person visit ``url`` (to connect an account, say) before the call goes on; returns once they say
        they did, and the caller checks again what the visit was for.

        Where questions are answered by a ledger (a 2026-07-28 request, a task run) and the client declared
        ``elicitation.url``: a URL-mode ``elicitation/create`` (``input_required``), answered ``accept`` to return.
        A handshake-era request of such a client: raises ``UrlElicitationRequired`` (-32042), which the client
        retries after the visit. Otherwise, and when the person declines: raises ``ToolError``, whose text carries
        the link. ``key`` as for ``elicit`` (call order by default: never the URL or the id, which change per run)."""
        ...

    async def elicitation_complete(self, elicitation_id: str) -> None:
        """Tell the client the URL-mode elicitation ``elicitation_id`` has completed (2025-11-25
        ``notifications/elicitation/complete``). Nothing is sent in the stateless era, which has no such notice (its
        client retries with the answer), nor to a client that did not declare URL-mode elicitation."""
        ...

    async def sample(
        self, messages: list[JSONObject], max_tokens: int, *, key: str | None = None, **params: Any
    ) -> JSONObject:
        """Ask the client's model for a completion (``sampling/createMessage``). Raises ``ClientRequestFailed``."""
        ...

    async def list_roots(self, *, key: str | None = None) -> list[JSONObject]:
        """The client's filesystem roots. Raises ``ClientRequestFailed``."""
        ...

    def limit_cache(self, ttl_ms: int, scope: str) -> None:
        """Say the source of this result promised no longer a life than ``ttl_ms`` and no wider sharing than
        ``scope``: the result's cache hints (2026-07-28) become at most these. Successive limits add up."""
        ...

    async def release_connection(self) -> None:
        """Say the tool will be quiet for a while: the transport may close the client's stream and let it
        reconnect later for the rest (SSE polling). Does nothing where the transport cannot resume."""
        ...

    async def continue_as_task(self) -> None:
        """Finish the call as a task from here on, where the client accepts tasks: the request is answered with
        the task, and the tool runs again in the background from the start, its questions answered. Does nothing
        elsewhere (the client takes no tasks, or the call already is one). Ask before this, act after it."""
        ...


class Outbound(Protocol):
    """Where a request's related messages go; implemented by the shell (an SSE stream, a session stream)."""

    async def notify(self, method: str, params: JSONObject) -> None: ...

    async def request(self, method: str, params: JSONObject) -> JSONObject:
        """Send a server-to-client request and wait for its result. Raises ``ClientRequestFailed``."""
        ...

    async def release(self) -> None:
        """Close the client's connection early if it can resume the stream later; otherwise do nothing."""
        ...


@dataclass
class RequestContext:
    """The ``ToolContext`` of one request, applying the protocol's rules before anything reaches the wire."""

    outbound: Outbound
    client_capabilities: JSONObject
    arguments: JSONObject
    progress_token: str | int | None = None
    log_level: str | None = None
    stateless: bool = False
    # Stateless era: where questions to the client are answered (MRTR); None sends them over ``outbound``.
    ledger: InputLedger | None = None
    # Whether ``continue_as_task`` turns this call into a task (a tool that continues as a task by itself).
    may_continue_as_task: bool = False
    # What the result's source allowed (``limit_cache``): applied to the result's cache hints by its handler.
    cache_limit: CacheHints | None = None
    # Whom the call acts for (``Env.caller``): opaque here; backends that act as the person read it.
    caller: object | None = None
    _last_progress: float | None = None

    @property
    def wants_progress(self) -> bool:
        return self.progress_token is not None

    @property
    def log_threshold(self) -> str | None:
        if self.log_level in LOG_LEVELS:
            return self.log_level
        return None if self.stateless else LOG_LEVELS[0]

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self.progress_token is None:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            raise ValueError(f"progress must increase: {progress} after {self._last_progress}")
        self._last_progress = progress
        params: JSONObject = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.outbound.notify("notifications/progress", params)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        if self.stateless and self.log_level is None:
            return
        if self.log_level is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        params: JSONObject = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self.outbound.notify("notifications/message", params)

    def client_declares(self, capability: str, sub: str | None = None) -> bool:
        return capability_declared(self.client_capabilities, capability, sub)

    async def _ask(self, method: str, params: JSONObject, key: str | None) -> JSONObject:
        """Raises ClientRequestFailed, or InputRequired when a stateless request must ask the client first."""
        if self.ledger is not None:
            return self.ledger.ask(method, params, key)
        return await self.outbound.request(method, params)

    def require(self, capability: str, sub: str | None = None) -> None:
        """Raises ClientRequestFailed (handshake era) or MissingClientCapability (stateless era)."""
        if self.client_declares(capability, sub):
            return
        if self.stateless:
            required: JSONObject = {capability: {sub: {}} if sub is not None else {}}
            raise MissingClientCapability(
                f"This request needs the client capability {capability}{'.' + sub if sub else ''}",
                data={"requiredCapabilities": required},
            )
        if self.client_capabilities.get(capability) is None:
            raise ClientRequestFailed(f"the client did not declare the {capability!r} capability")
        raise ClientRequestFailed(f"the client did not declare {capability}.{sub}")

    async def elicit(self, message: str, requested_schema: JSONObject, *, key: str | None = None) -> JSONObject:
        self.require("elicitation")
        declared = self.client_capabilities["elicitation"]
        # An empty elicitation capability means form mode (2025-06-18 clients know no other).
        if isinstance(declared, dict) and declared and "form" not in declared:
            raise ClientRequestFailed("the client did not declare form-mode elicitation")
        params: JSONObject = {"message": message, "requestedSchema": requested_schema}
        return await self._ask("elicitation/create", params, key)

    async def elicit_url(self, message: str, url: str, elicitation_id: str, *, key: str | None = None) -> JSONObject:
        self.require("elicitation", "url")
        return await self._ask("elicitation/create", url_elicitation(message, url, elicitation_id), key)

    async def require_url_visit(self, message: str, url: str, elicitation_id: str, *, key: str | None = None) -> None:
        """Raises ``InputRequired`` (the question is open), ``UrlElicitationRequired`` (handshake era) or
        ``ToolError`` (the client cannot be asked, or the person declined)."""
        if self.client_declares("elicitation", "url"):
            params = url_elicitation(message, url, elicitation_id)
            if self.ledger is not None:
                answer = self.ledger.ask("elicitation/create", params, key)
                if answer.get("action") == "accept":
                    return
                raise ToolError(f"{message} (the user declined to open {url})")
            if not self.stateless:
                raise UrlElicitationRequired(message, data={"elicitations": [params]})
        # A client that cannot be sent to a page (or a 2026-07-28 request whose shell answers no questions).
        raise ToolError(f"{message} (open {url} to continue, then try again)")

    async def elicitation_complete(self, elicitation_id: str) -> None:
        if self.stateless or not self.client_declares("elicitation", "url"):
            return
        await self.outbound.notify("notifications/elicitation/complete", {"elicitationId": elicitation_id})

    async def sample(
        self, messages: list[JSONObject], max_tokens: int, *, key: str | None = None, **params: Any
    ) -> JSONObject:
        self.require("sampling")
        return await self._ask("sampling/createMessage", {"messages": messages, "maxTokens": max_tokens, **params}, key)

    def limit_cache(self, ttl_ms: int, scope: str) -> None:
        limit = CacheHints(ttl_ms=ttl_ms, scope=scope)
        self.cache_limit = limit if self.cache_limit is None else narrowest(self.cache_limit, limit)

    async def release_connection(self) -> None:
        await self.outbound.release()

    async def continue_as_task(self) -> None:
        if self.may_continue_as_task:
            raise ContinueAsTask()

    async def list_roots(self, *, key: str | None = None) -> list[JSONObject]:
        self.require("roots")
        result = await self._ask("roots/list", {}, key)
        roots = result.get("roots")
        if not isinstance(roots, list):
            raise ClientRequestFailed("roots/list result has no roots list")
        return roots
