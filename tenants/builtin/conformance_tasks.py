"""Python functions behind the conformance tenant's task fixtures (the suite's tasks-* scenarios).

The suite's reference server has no task fixtures; the scenarios describe them, and these follow that
description: ``greet`` never runs as a task, ``slow_compute`` sleeps, ``failing_job`` ends in a tool error,
``protocol_error_job`` in a JSON-RPC error, ``confirm_delete`` and ``multi_input`` ask while they run as tasks,
and ``test_tool_with_task`` asks in the request (MRTR) and then continues as a task.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_core.context import ToolContext
from mcp_core.errors import InternalError, ToolError
from tenants.backends.registry import python_tool

JSONObject = dict[str, Any]

# The longest slow_compute sleeps (the scenarios ask for at most a minute).
MAX_COMPUTE_SECONDS = 600.0
FAILING_JOB_SECONDS = 1.0

CONFIRM_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Go ahead"}},
    "required": ["confirm"],
}
NAME_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "A name"}},
    "required": ["name"],
}


def _accepted(answer: JSONObject, field: str) -> Any:
    content = answer.get("content")
    return content.get(field) if answer.get("action") == "accept" and isinstance(content, dict) else None


@python_tool("conformance.greet")
async def greet(ctx: ToolContext, name: str) -> str:
    return f"Hello, {name}!"


@python_tool("conformance.slow_compute")
async def slow_compute(ctx: ToolContext, seconds: float, label: str = "") -> str:
    # As a 2026-07-28 task, the progress becomes the task's status message: a client sees it started.
    await ctx.report_progress(0, float(seconds) or None, f"Computing {label or 'result'}")
    # Cancelling the task cancels the sleep: the run ends without a result.
    await asyncio.sleep(min(float(seconds), MAX_COMPUTE_SECONDS))
    return f"Computed {label or 'result'} after {seconds:g} second(s)"


@python_tool("conformance.failing_job")
async def failing_job(ctx: ToolContext) -> str:
    await asyncio.sleep(FAILING_JOB_SECONDS)
    raise ToolError("The job failed: the input data could not be processed")


@python_tool("conformance.protocol_error_job")
async def protocol_error_job(ctx: ToolContext) -> str:
    raise InternalError("The job hit an internal error")


@python_tool("conformance.confirm_delete")
async def confirm_delete(ctx: ToolContext, filename: str) -> str:
    answer = await ctx.elicit(f"Delete {filename}?", CONFIRM_SCHEMA, key="confirm_delete")
    return f"Deleted {filename}" if _accepted(answer, "confirm") else f"Kept {filename}"


@python_tool("conformance.multi_input")
async def multi_input(ctx: ToolContext) -> str:
    name, confirmed = await asyncio.gather(
        ctx.elicit("What should the copy be called?", NAME_SCHEMA, key="copy_name"),
        ctx.elicit("Make the copy?", CONFIRM_SCHEMA, key="copy_confirm"),
    )
    if not _accepted(confirmed, "confirm"):
        return "No copy made"
    return f"Copy made as {_accepted(name, 'name') or 'unnamed'}"


@python_tool("conformance.tool_with_task", continues_as_task=True)
async def tool_with_task(ctx: ToolContext) -> str:
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    await ctx.continue_as_task()
    return f"Hello, {_accepted(answer, 'name') or 'stranger'}! Your task has finished."
