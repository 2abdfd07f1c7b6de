"""Tools: ``tools/list`` and ``tools/call`` with input validation, error results and output schemas, and the call
as a task: started in the request (``CreateTaskResult``) and run wherever the shell runs tasks."""

from __future__ import annotations

import logging
from typing import Any

from mcp_core.catalog import ToolDefinition
from mcp_core.content import error_result, result_for_version, tool_result
from mcp_core.context import RequestContext
from mcp_core.env import Env
from mcp_core.errors import ClientRequestFailed, InvalidParams, McpError, ToolError, error_to_wire
from mcp_core.features.listing import list_page
from mcp_core.mrtr import Answer, InputRequired
from mcp_core.schema_check import SchemaCheck, compiled_schema
from mcp_core.standard_headers import check_param_headers
from mcp_core.tasks import (
    ContinueAsTask,
    Execution,
    TaskEvent,
    TaskOutcome,
    TaskRequest,
    create_task_result,
    plan_call,
    requested_ttl,
)
from mcp_core.versions import STATELESS_VERSIONS, V2025_03_26, V2025_06_18, V2025_11_25, at_least

logger = logging.getLogger(__name__)
JSONObject = dict[str, Any]

# Optional tool fields and the revision that introduced each.
_TOOL_FIELD_SINCE = {
    "annotations": V2025_03_26,
    "title": V2025_06_18,
    "outputSchema": V2025_06_18,
    "icons": V2025_11_25,
    "execution": V2025_11_25,
}
# Fields the stateless era left: there the server alone decides which calls become tasks (tasks extension).
_TOOL_FIELDS_BEFORE_STATELESS = frozenset({"execution"})


def _served(field: str, version: str) -> bool:
    if field in _TOOL_FIELDS_BEFORE_STATELESS and version in STATELESS_VERSIONS:
        return False
    return field not in _TOOL_FIELD_SINCE or at_least(version, _TOOL_FIELD_SINCE[field])


def tool_for_version(tool: JSONObject, version: str) -> JSONObject:
    """A tool definition without the fields ``version`` predates or no longer has."""
    if all(_served(field, version) for field in tool):
        return tool
    return {k: v for k, v in tool.items() if _served(k, version)}


def validation_errors(tool: ToolDefinition, which: str, schema: JSONObject, instance: Any) -> list[str]:
    """Human-readable reasons ``instance`` does not conform to ``schema`` (empty when it does). The compiled
    schema is remembered on ``tool`` under ``which`` (see ToolDefinition)."""
    check: SchemaCheck | None = tool.validators.get(which)
    if check is None:
        check = tool.validators.setdefault(which, compiled_schema(schema))
    return check.errors(instance)


async def list_tools(params: JSONObject | None, env: Env) -> JSONObject:
    result = await list_page(params, env.catalog.list_tools, key="tools", env=env)
    result["tools"] = [tool_for_version(t, env.version) for t in result["tools"]]
    return result


async def call_tool(params: JSONObject | None, env: Env) -> JSONObject:
    """Run a tool, in the request or as a task. Unknown tools are protocol errors; everything the tool itself gets
    wrong is an isError result.

    Raises InvalidParams for a missing/unknown name or non-object arguments, HeaderMismatch (stateless era) when an
    ``Mcp-Param-*`` header disagrees with the arguments, MissingClientCapability (stateless era) when the tool
    needs a capability the client did not declare (the tasks extension included), MethodNotFound (2025-11-25) for
    a task-augmented call the tool does not allow, and TaskLimitExceeded when the caller has too many tasks.
    """
    params = params or {}
    name = params.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidParams("tools/call needs a tool name")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidParams("tools/call arguments must be an object")
    tool = await env.catalog.get_tool(name)
    if tool is None:
        raise InvalidParams(f"Unknown tool: {name}", data={"name": name})

    input_schema = tool.wire.get("inputSchema") or {"type": "object"}
    if env.stateless and env.headers is not None:
        check_param_headers(input_schema=input_schema, arguments=arguments, headers=env.headers)
    execution = Execution.INLINE
    if env.tasks is not None:
        execution = plan_call(
            version=env.version,
            stateless=env.stateless,
            tool=name,
            support=tool.task_support,
            continues_as_task=tool.continues_as_task,
            client_capabilities=env.client_capabilities,
            task_param=params.get("task"),
        )
    problems = validation_errors(tool, "input", input_schema, arguments)
    if problems:
        return error_result("Invalid arguments for tool " + name + ": " + "; ".join(problems))

    if execution is Execution.TASK:
        ttl = None if env.stateless else requested_ttl(params.get("task"))
        return await _start_task(name, arguments, env, ttl_ms=ttl)
    ctx = env.request_context(arguments, may_continue_as_task=execution is Execution.INLINE_UNTIL_TASK)
    try:
        return await run_tool(tool, arguments, env, ctx)
    except ContinueAsTask:
        # The questions asked so far are answered: the task replays them instead of asking again.
        answers = dict(env.ledger.used) if env.ledger is not None else {}
        return await _start_task(name, arguments, env, answers=answers)


async def _start_task(
    name: str,
    arguments: JSONObject,
    env: Env,
    *,
    ttl_ms: int | None = None,
    answers: dict[str, Answer] | None = None,
) -> JSONObject:
    assert env.tasks is not None
    task = await env.tasks.create(
        TaskRequest(
            tool=name,
            arguments=arguments,
            client_capabilities=env.client_capabilities,
            log_level=env.log_level,
            progress_token=env.progress_token,
            ttl_ms=ttl_ms,
            answers=answers or {},
        )
    )
    return create_task_result(task, stateless=env.stateless)


async def run_tool(tool: ToolDefinition, arguments: JSONObject, env: Env, ctx: RequestContext) -> JSONObject:
    """The ``CallToolResult`` of running ``tool`` with checked ``arguments``, for ``env.version``.

    Raises McpError from the tool, and lets InputRequired and ContinueAsTask through to whoever asked for them.
    """
    name = tool.wire["name"]
    try:
        value = await env.catalog.invoke_tool(tool, arguments, ctx)
    except ToolError as exc:
        return error_result(str(exc))
    except ClientRequestFailed as exc:
        return error_result(f"The tool needed something from the client that failed: {exc}")
    except McpError:
        raise
    except Exception:
        logger.exception("tool %s failed", name)
        return error_result(f"Tool {name} failed with an internal error")

    result = tool_result(value)
    output_schema = tool.wire.get("outputSchema")
    if output_schema and not result.get("isError"):
        structured = result.get("structuredContent")
        if structured is None:
            return error_result(f"Tool {name} returned no structuredContent although it declares an outputSchema")
        problems = validation_errors(tool, "output", output_schema, structured)
        if problems:
            return error_result(f"Tool {name} returned output not matching its outputSchema: " + "; ".join(problems))
    return result_for_version(result, env.version)


async def run_task_call(tool_name: str, arguments: JSONObject, env: Env) -> TaskOutcome:
    """One run of a task's ``tools/call`` (wherever the shell runs it): its result, its JSON-RPC error, or the
    questions it asked. ``env.ledger`` holds the answers the task has so far; the tool replays them."""
    assert env.ledger is not None
    tool = await env.catalog.get_tool(tool_name)
    if tool is None:
        missing = InvalidParams(f"Unknown tool: {tool_name}", data={"name": tool_name})
        return TaskOutcome(TaskEvent.FAIL, error=error_to_wire(missing)[1])
    try:
        result: JSONObject | None = await run_tool(tool, arguments, env, env.request_context(arguments))
    except InputRequired:
        result = None
    except McpError as exc:
        return TaskOutcome(TaskEvent.FAIL, error=error_to_wire(exc)[1])
    if env.ledger.asked or result is None:
        return TaskOutcome(TaskEvent.NEEDS_INPUT, questions=dict(env.ledger.asked))
    return TaskOutcome(TaskEvent.COMPLETE, result=result)
