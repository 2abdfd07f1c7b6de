"""Method routing: which handler answers which method, per era. Deliberately small and table-driven."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp_core.caching import with_cache_hints
from mcp_core.env import Env
from mcp_core.envelope import complete_result
from mcp_core.errors import MethodNotFound
from mcp_core.features import completion, discovery, lifecycle, logging, prompts, resources, tasks, tools
from mcp_core.mrtr import InputRequired, input_required_result, open_round

JSONObject = dict[str, Any]
Handler = Callable[[JSONObject | None, Env], Awaitable[JSONObject]]

HANDSHAKE_METHODS: dict[str, Handler] = {
    "ping": lifecycle.ping,
    "tools/list": tools.list_tools,
    "tools/call": tools.call_tool,
    "resources/list": resources.list_resources,
    "resources/read": resources.read_resource,
    "resources/templates/list": resources.list_resource_templates,
    "resources/subscribe": resources.subscribe,
    "resources/unsubscribe": resources.unsubscribe,
    "prompts/list": prompts.list_prompts,
    "prompts/get": prompts.get_prompt,
    "completion/complete": completion.complete,
    "logging/setLevel": logging.set_level,
    # 2025-11-25 only (older revisions get MethodNotFound from the handlers).
    "tasks/get": tasks.get_task,
    "tasks/result": tasks.task_result,
    "tasks/list": tasks.list_tasks,
    "tasks/cancel": tasks.cancel_task,
}

# 2026-07-28: no initialize, ping, logging/setLevel or resources/(un)subscribe; server/discover instead.
STATELESS_METHODS: dict[str, Handler] = {
    "server/discover": discovery.discover,
    "tools/list": tools.list_tools,
    "tools/call": tools.call_tool,
    "resources/list": resources.list_resources,
    "resources/read": resources.read_resource,
    "resources/templates/list": resources.list_resource_templates,
    "prompts/list": prompts.list_prompts,
    "prompts/get": prompts.get_prompt,
    "completion/complete": completion.complete,
    # The tasks extension: results are inlined on tasks/get; tasks/result and tasks/list are gone.
    "tasks/get": tasks.get_task,
    "tasks/update": tasks.update_task,
    "tasks/cancel": tasks.cancel_task,
}

# Methods whose handlers may talk to the client while they run (progress, logs, server-to-client requests);
# in the stateless era the only ones that may answer input_required (MRTR).
INTERACTIVE_METHODS: frozenset[str] = frozenset({"tools/call", "resources/read", "prompts/get"})


async def dispatch(method: str, params: JSONObject | None, env: Env) -> JSONObject:
    """Answer one request. Raises MethodNotFound, or whatever McpError the handler raises."""
    if env.stateless:
        return await _dispatch_stateless(method, params, env)
    handler = HANDSHAKE_METHODS.get(method)
    if handler is None:
        raise MethodNotFound(f"Method not found: {method}", data={"method": method})
    return await handler(params, env)


async def _dispatch_stateless(method: str, params: JSONObject | None, env: Env) -> JSONObject:
    """Raises MethodNotFound with HTTP 404 for a method this era does not have."""
    handler = STATELESS_METHODS.get(method)
    if handler is None:
        raise MethodNotFound(f"Method not found: {method}", data={"method": method}, http_status=404)
    if method in INTERACTIVE_METHODS and env.input_policy is not None:
        result = await _run_with_inputs(method, params or {}, env, handler)
    else:
        result = with_cache_hints(method, await handler(params, env), env.cache)
    return complete_result(result, lifecycle.server_info(env.server, env.version))


async def _run_with_inputs(method: str, params: JSONObject, env: Env, handler: Handler) -> JSONObject:
    """Run the handler with the answers the request brings; any question left open makes the result
    ``input_required`` (never cached). Raises InvalidParams for malformed or unverifiable inputs."""
    assert env.input_policy is not None
    ledger = open_round(method, params, env.input_policy)
    # The request's own Env (the shell builds one per request) carries the ledger while the handler runs: copying it
    # with dataclasses.replace cost more than the rest of this function.
    previous, env.ledger = env.ledger, ledger
    try:
        result: JSONObject | None = await handler(params, env)
    except InputRequired:
        result = None
    finally:
        env.ledger = previous
    if ledger.asked or result is None:
        return input_required_result(ledger, method, params, env.input_policy)
    return with_cache_hints(method, result, env.cache)
